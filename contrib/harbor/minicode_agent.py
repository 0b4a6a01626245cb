"""minicode as a Harbor installed agent.

Harbor (https://harborframework.com) runs agents on Terminal-Bench and other datasets in
Docker, Daytona or Modal sandboxes. This adapter follows Harbor's installed-agent interface
(``harbor.agents.installed.base.BaseInstalledAgent``, checked against harbor 0.26): ``install``
puts the minicode binary into the task container, ``run`` runs it one-shot with ``--yes`` and
the task's instruction (then exports the session as an ATIF trajectory beside the log), and
``populate_context_post_run`` reads the run's token counts from the stream-json log.

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

from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

# Where install uploads the binary before moving it onto the PATH.
UPLOADED = "/tmp/minicode-upload"
# Variables passed from the host to minicode, when set.
PASSED = ("MINICODE_BASE_URL", "MINICODE_API_KEY", "MINICODE_LOG")


class MiniCode(BaseInstalledAgent):
    """Runs ``minicode --yes`` once per task, in the task's container."""

    def __init__(self, *args, sandbox: str = "off", binary: str | None = None, **kwargs):
        # The task container is the isolation boundary, and Landlock or user namespaces are
        # often missing inside one; `--agent-kwarg sandbox=workspace-write` keeps minicode's own.
        super().__init__(*args, **kwargs)
        self._sandbox = sandbox
        self._binary = binary or os.environ.get("MINICODE_BINARY")

    @staticmethod
    def name() -> str:
        return "minicode"

    def get_version_command(self) -> str | None:
        return "minicode --version"

    def parse_version(self, stdout: str) -> str:
        # `minicode --version` prints `minicode 0.1.0`.
        return stdout.strip().split()[-1] if stdout.strip() else ""

    async def install(self, environment: BaseEnvironment) -> None:
        if not self._binary or not Path(self._binary).is_file():
            raise RuntimeError(
                "set MINICODE_BINARY (or --agent-kwarg binary=PATH) to a minicode binary "
                "built for the task container"
            )
        await environment.upload_file(source_path=Path(self._binary), target_path=UPLOADED)
        await self.exec_as_root(
            environment,
            command=(
                f"install -m 0755 {UPLOADED} /usr/local/bin/minicode && rm -f {UPLOADED} "
                "&& minicode --version"
            ),
        )

    def _model(self) -> str | None:
        # Harbor names models provider/name; an OpenAI-compatible server wants the name.
        if not self.model_name:
            return None
        return self.model_name.split("/", 1)[-1]

    def run_command(self, instruction: str) -> str:
        """The shell command that runs the task: minicode one-shot, its events logged, then
        the session exported as ATIF beside them; the run's own exit status is kept."""
        logs = shlex.quote(str(self.environment_logs_dir))
        flags = ["--yes", "--output-format", "stream-json", "--sandbox", self._sandbox]
        model = self._model()
        if model:
            flags += ["--model", model]
        run = (
            f"minicode {' '.join(shlex.quote(f) for f in flags)} -- {shlex.quote(instruction)} "
            f"</dev/null 2>{logs}/minicode.stderr.txt | tee {logs}/minicode.jsonl"
        )
        # The session id is in the first event.
        export = (
            f"sid=$(head -n 1 {logs}/minicode.jsonl | sed -n 's/.*\"session_id\":\"\\([^\"]*\\)\".*/\\1/p'); "
            f'[ -n "$sid" ] && minicode export "$sid" --format atif > {logs}/trajectory.json || true'
        )
        return f"mkdir -p {logs}; {run}; status=$?; {export}; exit $status"

    def run_env(self) -> dict[str, str]:
        return {name: os.environ[name] for name in PASSED if os.environ.get(name)}

    @with_prompt_template
    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        await self.exec_as_agent(
            environment, command=self.run_command(instruction), env=self.run_env()
        )

    def populate_context_post_run(self, context: AgentContext) -> None:
        events = Path(self.logs_dir) / "minicode.jsonl"
        if not events.is_file():
            return
        totals = read_token_totals(events.read_text(errors="replace"))
        context.n_input_tokens = totals["input"]
        context.n_cache_tokens = totals["cached"]
        context.n_output_tokens = totals["output"]


def read_token_totals(stream_json: str) -> dict[str, int]:
    """Token counts summed over the run's ``turn_ended`` events (lines that are not JSON are
    skipped: the log may end in the middle of a line when the task timed out)."""
    totals = {"input": 0, "cached": 0, "output": 0}
    for line in stream_json.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") != "turn_ended":
            continue
        tokens = (event.get("stats") or {}).get("tokens") or {}
        totals["input"] += int(tokens.get("input_tokens") or 0)
        totals["cached"] += int(tokens.get("cached_tokens") or 0)
        totals["output"] += int(tokens.get("output_tokens") or 0)
    return totals
