"""GPU presets on verl: compose verl's own Hydra config (ppo_trainer.yaml) with the preset's
overrides, validate it with verl's validate_config, and run verl's PPO driver with a TaskRunner that
installs the DepGPO advantage step (verl_glue) in the process where verl computes advantages."""

from __future__ import annotations

from pathlib import Path


def verl_config_dir() -> str:
    import verl.trainer.main_ppo as main_ppo  # type: ignore

    return str(Path(main_ppo.__file__).parent / "config")


def compose_config(overrides: list[str]):
    """verl's ppo_trainer config with the overrides applied, exactly as `python -m verl.trainer.main_ppo` builds it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        return compose(config_name="ppo_trainer", overrides=list(overrides))


def validate(config) -> None:
    """verl's own checks (batch sizes against GPUs, micro batches, estimator...), as main_ppo runs them."""
    from verl.trainer.main_ppo import need_critic, need_reference_policy  # type: ignore
    from verl.utils.config import validate_config  # type: ignore

    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))


def run(overrides: list[str]) -> None:
    import ray  # type: ignore
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo  # type: ignore

    from .verl_glue import install_in_verl

    why = install_in_verl()
    if why:
        raise RuntimeError(f"cannot install the DepGPO estimator in verl: {why}")
    config = compose_config(overrides)
    validate(config)

    # main_ppo's TaskRunnerV1 is a Ray actor class; subclass the plain class under it.
    base = getattr(TaskRunnerV1, "__ray_actor_class__", TaskRunnerV1)

    class TbrlTaskRunner(base):
        def run(self, config):
            from tbrl_bridge.verl_glue import install_in_verl as install

            install()
            return super().run(config)

    run_ppo(config, task_runner_class=ray.remote(num_cpus=1)(TbrlTaskRunner))
