# `ray start` for the studio's LOCAL dev clusters (scripts/ray.sh's head, the eval tests' and bench's
# head + workers from test/helpers/ray-cluster.ts): `python scripts/ray-start.py start ARGS...`, run
# with .venv/ray's python and the variables of scripts/ray-local.env in the environment. Never used for
# a user's own cluster: `tbrl eval --ray` / `tbrl train` only talk to a cluster's Jobs API.
#
# It is `ray start` with three things `ray start` has no option for:
#
# - TBRL_RAY_DASHBOARD_MODULES (comma-separated dashboard module class names, from scripts/ray-local.env):
#   the head's dashboard loads only those (dashboard.py --modules-to-load). By default it runs nine module
#   processes (node, reporter, event, serve, state, train, data, metrics, job) that it health-checks every
#   second and that check it back, ~0.04 CPU-s a second idle on a two-core box. Unset or empty: all of them
#   (Ray's default). Measured in src/core/eval/README.md ("A dashboard with only the modules the studio uses").
# - TBRL_RAY_START_PATIENCE_S: how long a node waits to register with the GCS. Ray's own wait is a 30 s
#   constant inside ray/_private/node.py, which a shared two-core machine under load misses; this makes each
#   of Ray's `services.get_node` asks retry until that many seconds have passed. Unset: Ray's own wait.
# - TBRL_RAY_LIGHT_SETUP_WORKER=1 (from scripts/ray-local.env): the node's raylet starts runtime-env workers
#   through scripts/ray_light_setup_worker.py instead of Ray's setup_worker.py, which imports all of Ray
#   before the worker imports it again (that file says why and what it keeps).
import os
import sys
import time

import ray._private.ray_constants as ray_constants
import ray._private.services as services

modules = [m.strip() for m in os.environ.get("TBRL_RAY_DASHBOARD_MODULES", "").split(",") if m.strip()]
if modules:
    start_process = services.start_ray_process

    def start_ray_process_with_modules(command, process_type, *args, **kwargs):
        # Only the dashboard's command line, and only when Ray itself has not chosen its modules
        # (it passes --modules-to-load=UsageStatsHead for --include-dashboard false).
        if process_type == ray_constants.PROCESS_TYPE_DASHBOARD and not any(c.startswith("--modules-to-load") for c in command):
            command = [*command, "--modules-to-load=" + ",".join(modules)]
        return start_process(command, process_type, *args, **kwargs)

    services.start_ray_process = start_ray_process_with_modules

patience = float(os.environ.get("TBRL_RAY_START_PATIENCE_S", "0") or 0)
if patience > 0:
    ask = services.get_node

    def patient_get_node(*args, **kwargs):
        end = time.monotonic() + patience
        while True:
            try:
                return ask(*args, **kwargs)
            except RuntimeError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.5)

    services.get_node = patient_get_node

if os.environ.get("TBRL_RAY_LIGHT_SETUP_WORKER") == "1":
    import ray._private.parameter as parameter

    light = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ray_light_setup_worker.py")
    # What the light script hands anything but a Python worker on Linux to.
    os.environ["TBRL_RAY_SETUP_WORKER_FALLBACK"] = os.path.join(os.path.dirname(os.path.abspath(ray_constants.__file__)), "workers", ray_constants.SETUP_WORKER_FILENAME)
    make_params = parameter.RayParams.__init__

    def params_with_light_setup_worker(self, *args, **kwargs):
        make_params(self, *args, **kwargs)
        if self.setup_worker_path is None:
            self.setup_worker_path = light

    parameter.RayParams.__init__ = params_with_light_setup_worker

from ray.scripts.scripts import main  # noqa: E402  (after the patches: it imports services' users)

sys.argv[0] = "ray"
sys.exit(main())
