/**
 * One correct, copyable example per action kind. Error messages end with the example of the
 * action the agent was attempting, because a model fixes a format faster from a sample than
 * from a description. Every example here is parsed by the unit tests, so they stay valid.
 */
export const ACTION_EXAMPLES: Record<string, string> = {
  bash: `<bash>
cmd: "ls -la /app"
block: true              # optional, default true; false runs it in the background
timeout_secs: 60         # optional
end_after_cmd_success: false   # optional; true ends the episode when the command exits 0
</bash>`,
  todo: `<todo>
operations:
  - action: add
    content: "Inspect the failing test"
  - action: complete
    task_id: 1
  - action: delete
    task_id: 2
view_all: true           # optional: show the list after the operations
</todo>`,
  'file.read': `<file>
action: read
file_path: "/app/main.py"
offset: 1                # optional: first line (1-based)
limit: 200               # optional: number of lines
</file>`,
  'file.write': `<file>
action: write
file_path: "/app/hello.py"
content: |
  def hello():
      return "hi"
</file>`,
  'file.edit': `<file>
action: edit
file_path: "/app/main.py"
old_string: |
  def add(a, b):
      return a - b
new_string: |
  def add(a, b):
      return a + b
replace_all: false       # optional
</file>`,
  'file.multi_edit': `<file>
action: multi_edit
file_path: "/app/main.py"
edits:
  - old_string: "import os"
    new_string: "import os\\nimport sys"
  - old_string: "DEBUG = True"
    new_string: "DEBUG = False"
    replace_all: true
</file>`,
  'file.metadata': `<file>
action: metadata
file_paths:              # at most 10
  - "/app/main.py"
  - "/app/data.csv"
</file>`,
  'search.grep': `<search>
action: grep
pattern: "def \\\\w+_handler"
path: "/app"             # optional, default: the current directory
include: "*.py"          # optional file-name filter
</search>`,
  'search.glob': `<search>
action: glob
pattern: "src/**/*.ts"
path: "/app"             # optional, default: the current directory
</search>`,
  'search.ls': `<search>
action: ls
path: "/app"
ignore:                  # optional
  - "*.pyc"
  - "__pycache__"
</search>`,
  'scratchpad.add_note': `<scratchpad>
action: add_note
content: "The config is read from /etc/app.conf, not from the repo."
</scratchpad>`,
  'scratchpad.view_all_notes': `<scratchpad>
action: view_all_notes
</scratchpad>`,
  finish: `<finish>
message: "Fixed the off-by-one in parse_range; all tests pass."
</finish>`,
};

/** The example for a kind, or the tag's first example when only the tag is known. */
export function exampleFor(kindOrTag: string): string {
  const direct = ACTION_EXAMPLES[kindOrTag];
  if (direct) return direct;
  const first = Object.keys(ACTION_EXAMPLES).find((k) => k.startsWith(`${kindOrTag}.`));
  return first ? ACTION_EXAMPLES[first]! : ACTION_EXAMPLES.bash!;
}
