# What a LOCAL dev cluster's raylets run in place of Ray's ray/_private/workers/setup_worker.py when they
# start a Python worker with a runtime env (scripts/ray-start.py points the nodes' setup_worker_path here
# when TBRL_RAY_LIGHT_SETUP_WORKER=1, from scripts/ray-local.env). Ray's script imports all of Ray (~0.8
# CPU-s on a two-core box) only to read its runtime env context and exec default_worker.py, which imports
# Ray again; every worker of a studio job (the job's supervisor, the trial actors) has a runtime env, so
# each paid it twice. This does the same without `import ray`: the context's env vars (with Ray's ${X}
# expansion), command prefix, Python executable and entrypoint override, then exec, as
# RuntimeEnvContext.exec_worker does for Python on Linux (Ray 2.x, the version .venv/ray pins). Anything
# else (another language, another platform) is handed to Ray's own script unchanged.
#
# The file name must end in "setup_worker.py": the raylet recognises the setup script in a worker's
# command by that name, and drops it for workers without a runtime env.
import argparse
import json
import os
import re
import shlex
import sys

parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--serialized-runtime-env-context", type=str)
parser.add_argument("--language", type=str)
args, passthrough = parser.parse_known_args()

if args.language != "PYTHON" or sys.platform != "linux":
    ray_setup = os.environ.get("TBRL_RAY_SETUP_WORKER_FALLBACK", "")
    os.execv(sys.executable, [sys.executable, ray_setup, *sys.argv[1:]])

context = json.loads(args.serialized_runtime_env_context or "{}")
for key, value in (context.get("env_vars") or {}).items():
    # ray._private.utils.update_envs: ${X} expanded from the environment, unknown ones dropped.
    os.environ[key] = re.sub(r"\$\{[A-Z0-9_]+\}", "", os.path.expandvars(value))
if context.get("override_worker_entrypoint"):
    passthrough[0] = context["override_worker_entrypoint"]
command = [*(context.get("command_prefix") or []), "exec", context.get("py_executable") or sys.executable, *(shlex.quote(a) for a in passthrough)]
os.execvp("bash", ["bash", "-c", " ".join(command)])
