"""Checks the adapter against the real ``harbor`` package; skipped, with the reason printed,
when harbor is not installed (``pip install harbor``). Run: ``python3 -m unittest
contrib/harbor/test_minicode_agent.py`` from the repository root."""

import asyncio
import importlib.util
import sys
import tempfile
import unittest
from pathlib import Path

HAVE_HARBOR = importlib.util.find_spec("harbor") is not None
REASON = "the harbor package is not installed (pip install harbor)"
sys.path.insert(0, str(Path(__file__).resolve().parent))


@unittest.skipUnless(HAVE_HARBOR, REASON)
class MiniCodeAgentTest(unittest.TestCase):
    def agent(self, logs: Path, **kwargs):
        from harbor.agents.installed.base import BaseInstalledAgent

        import minicode_agent

        agent = minicode_agent.MiniCode(logs_dir=logs, model_name="openai/qwen-coder", **kwargs)
        self.assertIsInstance(agent, BaseInstalledAgent)
        return agent

    def test_runs_one_shot_with_yes_and_the_quoted_instruction(self):
        with tempfile.TemporaryDirectory() as logs:
            agent = self.agent(Path(logs))
            self.assertEqual(agent.name(), "minicode")
            self.assertTrue(agent._install_agent_template_path.is_file())
            run, export = agent.create_run_agent_commands("fix it; don't `rm` anything")
            self.assertIn("minicode --yes", run.command)
            self.assertIn("--model qwen-coder", run.command)
            self.assertIn("-- 'fix it; don'\"'\"'t `rm` anything'", run.command)
            self.assertIn("minicode export", export.command)

    def test_reads_tokens_from_the_stream_json_log(self):
        from harbor.models.agent.context import AgentContext

        with tempfile.TemporaryDirectory() as logs:
            Path(logs, "minicode.jsonl").write_text(
                '{"type":"turn_started","turn":1}\n'
                '{"type":"turn_ended","turn":1,"end":{"status":"completed"},'
                '"stats":{"tokens":{"input_tokens":120,"output_tokens":7}}}\n'
                '{"type":"shutdown_comp'
            )
            context = AgentContext()
            self.agent(Path(logs)).populate_context_post_run(context)
            self.assertEqual((context.n_input_tokens, context.n_output_tokens), (120, 7))

    def test_setup_refuses_without_a_binary(self):
        with tempfile.TemporaryDirectory() as logs:
            agent = self.agent(Path(logs), binary=str(Path(logs, "missing")))
            with self.assertRaises(RuntimeError):
                asyncio.run(agent.setup(environment=None))


if __name__ == "__main__":
    if not HAVE_HARBOR:
        print(f"skipped: {REASON}")
    unittest.main()
