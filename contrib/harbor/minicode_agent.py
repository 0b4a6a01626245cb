"""minicode as a Harbor installed agent.

Harbor (https://harborframework.com) runs agents on Terminal-Bench and other datasets in
Docker, Daytona or Modal sandboxes. This adapter follows Harbor's installed-agent interface
(``harbor.agents.installed.base.BaseInstalledAgent``): ``setup`` puts the minicode binary into
the task container, ``create_run_agent_commands`` runs it one-shot with ``--yes`` and the
task's instruction, and ``populate_context_post_run`` reads the run's token counts and leaves
an ATIF trajectory (``minicode export --format atif``) in the agent's log folder.

    harbor run -d terminal-bench@2.0 \\
      --agent-import-path contrib.harbor.minicode_agent:MiniCode \\
      --model openai/qwen2.5-coder-7b-instruct

Environment read on the host:
  MINICODE_BINARY    the minicode binary to install (a static Linux build for the container's
                     architecture, e.g. ``cargo build --release --target x86_64-unknown-linux-musl``)
  MINICODE_BASE_URL  the model server as seen from inside the container
  MINICODE_API_KEY   its key, if it needs one (passed to minicode only)
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from harbor.agents.installed.base import BaseInstalledAgent, ExecInput
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

# Where setup uploads the binary; the install script moves it onto the PATH.
UPLOADED = "/tmp/minicode-upload"
# The agent's log folder inside the container (Harbor mounts it as ``logs_dir``).
LOGS = "/logs/agent"
# Variables passed from the host to minicode, when set.
PASSED = ("MINICODE_BASE_URL", "MINICODE_API_KEY", "MINICODE_LOG")


class MiniCode(BaseInstalledAgent):
    """Runs ``minicode --yes`` once per task, in the task's container."""

    SUPPORTS_ATIF: bool = True

    def __init__(self, *args, sandbox: str = "off", binary: str | None = None, **kwargs):
        # The task container is the isolation boundary, and Landlock or user namespaces are
        # often missing inside one; `--agent-kwarg sandbox=workspace-write` keeps minicode's own.
        super().__init__(*args, **kwargs)
        self._sandbox = sandbox
        self._binary = binary or os.environ.get("MINICODE_BINARY")

    @staticmethod
    def name() -> str:
        return "minicode"

    @property
    def _install_agent_template_path(self) -> Path:
        return Path(__file__).parent / "install-minicode.sh.j2"

    async def setup(self, environment: BaseEnvironment) -> None:
        if not self._binary or not Path(self._binary).is_file():
            raise RuntimeError(
                "set MINICODE_BINARY (or --agent-kwarg binary=PATH) to a minicode binary "
                "built for the task container"
            )
        await environment.upload_file(source_path=Path(self._binary), target_path=UPLOADED)
        await super().setup(environment)

    def _model(self) -> str | None:
        # Harbor names models provider/name; an OpenAI-compatible server wants the name.
        if not self.model_name:
            return None
        return self.model_name.split("/", 1)[-1]

    def create_run_agent_commands(self, instruction: str) -> list[ExecInput]:
        env = {name: os.environ[name] for name in PASSED if os.environ.get(name)}
        flags = ["--yes", "--output-format", "stream-json", "--sandbox", self._sandbox]
        model = self._model()
        if model:
            flags += ["--model", model]
        run = (
            f"minicode {' '.join(shlex.quote(f) for f in flags)} -- {shlex.quote(instruction)} "
            f"</dev/null 2>{LOGS}/minicode.stderr.txt | tee {LOGS}/minicode.jsonl"
        )
        # The session id is in the first event; its ATIF trajectory goes beside the log.
        export = (
            f"sid=$(head -n 1 {LOGS}/minicode.jsonl | sed -n 's/.*\"session_id\":\"\\([^\"]*\\)\".*/\\1/p'); "
            f'[ -n "$sid" ] && minicode export "$sid" --format atif > {LOGS}/trajectory.json || true'
        )
        return [ExecInput(command=run, env=env), ExecInput(command=export, env=env)]

    def populate_context_post_run(self, context: AgentContext) -> None:
        events = Path(self.logs_dir) / "minicode.jsonl"
        if not events.is_file():
            return
        totals = read_token_totals(events.read_text(errors="replace"))
        context.n_input_tokens = totals["input"]
        context.n_output_tokens = totals["output"]


def read_token_totals(stream_json: str) -> dict[str, int]:
    """Token counts summed over the run's ``turn_ended`` events (lines that are not JSON are
    skipped: the log may end in the middle of a line when the task timed out)."""
    totals = {"input": 0, "output": 0}
    for line in stream_json.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") != "turn_ended":
            continue
        tokens = (event.get("stats") or {}).get("tokens") or {}
        totals["input"] += int(tokens.get("input_tokens") or 0)
        totals["output"] += int(tokens.get("output_tokens") or 0)
    return totals
