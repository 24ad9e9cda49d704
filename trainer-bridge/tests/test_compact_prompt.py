"""cpu-tiny's compact system prompt is the editor's `compact-v1` prompt, so a trained policy is
evaluated (`tbrl eval` with "promptVersion": "compact-v1") with the prompt it was trained on."""

from conftest import REPO

from tbrl_bridge.episode import COMPACT_SYSTEM_PROMPT


def test_compact_prompt_equals_the_editors_compact_v1():
    text = (REPO / "src" / "core" / "prompts" / "system-compact-v1.md").read_text(encoding="utf-8").rstrip()
    assert text == COMPACT_SYSTEM_PROMPT
