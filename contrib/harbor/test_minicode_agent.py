"""Checks the adapter against the real ``harbor`` package (Python 3.12+); skipped, with the
reason printed, when harbor is not installed (``pip install harbor``). Run: ``python3 -m
unittest contrib/harbor/test_minicode_agent.py`` from the repository root.

Harbor's environments need Docker or a cloud sandbox, so ``Recorder`` stands in for one: it
records what the agent uploads and runs, and answers every command with success."""

import asyncio
import importlib.util
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

HAVE_HARBOR = importlib.util.find_spec("harbor") is not None
REASON = "the harbor package is not installed (pip install harbor; it needs Python 3.12+)"
sys.path.insert(0, str(Path(__file__).resolve().parent))


class Recorder:
    """What an agent did to its environment, in order."""

    default_user = None

    def __init__(self):
        self.calls = []

    async def upload_file(self, source_path, target_path):
        self.calls.append(("upload", str(source_path), target_path))

    async def exec(self, command, user=None, env=None, cwd=None, timeout_sec=None):
        self.calls.append(("exec", command, user, dict(env or {})))
        return SimpleNamespace(return_code=0, stdout="minicode 0.1.0\n", stderr="")


@unittest.skipUnless(HAVE_HARBOR, REASON)
class MiniCodeAgentTest(unittest.TestCase):
    def agent(self, logs: Path, **kwargs):
        from harbor.agents.installed.base import BaseInstalledAgent

        import minicode_agent

        agent = minicode_agent.MiniCode(logs_dir=logs, model_name="openai/qwen-coder", **kwargs)
        self.assertIsInstance(agent, BaseInstalledAgent)
        return agent

    def test_runs_one_shot_with_yes_and_the_quoted_instruction(self):
        from harbor.models.agent.context import AgentContext

        with tempfile.TemporaryDirectory() as logs:
            agent = self.agent(Path(logs))
            self.assertEqual(agent.name(), "minicode")
            env = Recorder()
            asyncio.run(agent.run("fix it; don't `rm` anything", env, AgentContext()))
            [(kind, command, _user, _env)] = env.calls
            self.assertEqual(kind, "exec")
            self.assertIn("minicode --yes", command)
            self.assertIn("--model qwen-coder", command)
            self.assertIn("-- 'fix it; don'\"'\"'t `rm` anything'", command)
            self.assertIn("minicode export", command)
            self.assertIn("exit $status", command)

    def test_install_uploads_the_binary_and_puts_it_on_the_path(self):
        with tempfile.TemporaryDirectory() as logs:
            binary = Path(logs, "minicode")
            binary.write_bytes(b"\x7fELF")
            env = Recorder()
            agent = self.agent(Path(logs), binary=str(binary))
            asyncio.run(agent.setup(env))
            uploads = [c for c in env.calls if c[0] == "upload"]
            self.assertEqual(uploads, [("upload", str(binary), "/tmp/minicode-upload")])
            installs = [c for c in env.calls if c[0] == "exec" and "install -m 0755" in c[1]]
            self.assertEqual(len(installs), 1)
            self.assertEqual(installs[0][2], "root")
            self.assertEqual(agent.version(), "0.1.0")

    def test_reads_tokens_from_the_stream_json_log(self):
        from harbor.models.agent.context import AgentContext

        with tempfile.TemporaryDirectory() as logs:
            Path(logs, "minicode.jsonl").write_text(
                '{"type":"turn_started","turn":1}\n'
                '{"type":"turn_ended","turn":1,"end":{"status":"completed"},'
                '"stats":{"tokens":{"input_tokens":120,"cached_tokens":100,"output_tokens":7}}}\n'
                '{"type":"shutdown_comp'
            )
            context = AgentContext()
            self.agent(Path(logs)).populate_context_post_run(context)
            self.assertEqual(
                (context.n_input_tokens, context.n_cache_tokens, context.n_output_tokens),
                (120, 100, 7),
            )

    def test_install_refuses_without_a_binary(self):
        with tempfile.TemporaryDirectory() as logs:
            agent = self.agent(Path(logs), binary=str(Path(logs, "missing")))
            with self.assertRaises(RuntimeError):
                asyncio.run(agent.install(Recorder()))


if __name__ == "__main__":
    if not HAVE_HARBOR:
        print(f"skipped: {REASON}")
    unittest.main()
