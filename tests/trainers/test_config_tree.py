"""Each setting is declared once, in its settings group (agentgym/train/config/, or a method's module): the runtime takes the
parsed groups as they are, so a flag reaches every place that uses its setting."""

from dataclasses import fields

import dapo
import gcd
import gigpo
import ppo
import pytest
import vspo
from trainer_helpers import TOOLQA_SMALL

from agentgym.agents import Policy, SamplingConfig
from agentgym.train.base.flags import build, settings
from agentgym.train.config.cli import parse
from agentgym.train.config.coldstart import SFTConfig
from agentgym.train.config.optim import LossConfig
from agentgym.train.config.rollout import LayoutConfig, RolloutConfig
from agentgym.train.config.run import BaseRunConfig, RunConfig
from agentgym.train.config.tree import SFTRunConfig, TrainConfig


def test_every_flat_name_means_one_setting_across_the_trainers():
    # benchmarks/learning_curves.py --override gives every method's cell the same flat names
    owner: dict[str, tuple] = {}
    for cls in (TrainConfig, vspo.VSPOTrainConfig, gigpo.GiGPOTrainConfig, dapo.DAPOTrainConfig, gcd.GCDTrainConfig,
                ppo.PPOTrainConfig):
        for s in settings(cls):
            if s.flat is not None:
                assert owner.setdefault(s.flat, s.path) == s.path, f"{s.flat}: {owner[s.flat]} and {s.path}"
    assert owner["std_normalize"] == ("optim", "std_normalize") and owner["tol"] == ("vspo", "tol")
    assert owner["step_std_normalize"] == ("gigpo", "step_std_normalize")
    assert owner["spread_tol"] == ("dapo", "spread_tol")
    assert owner["gamma"] == ("gigpo", "gamma") and owner["lam"] == ("gcd", "lam")
    assert owner["gae_gamma"] == ("ppo", "gae_gamma") and owner["gae_lambda"] == ("ppo", "gae_lambda")


@pytest.mark.parametrize("cls,argv,new", [
    ("gigpo", ["--gigpo.no-std-normalize"], "--gigpo.no-step-std-normalize"),
    ("gigpo", ["--gigpo.std-normalize"], "--gigpo.step-std-normalize"),
    ("dapo", ["--dapo.tol", "0.5"], "--dapo.spread-tol"),
    ("gcd", ["--gcd.judge-eps-high=0.3"], "--gcd.judge-loss.eps-high"),
    ("gcd", ["--gcd.judge-beta", "0.05"], "--gcd.judge-loss.beta"),
    ("ppo", ["--ppo.lam=0.8"], "--ppo.gae-lambda"),
])
def test_a_renamed_method_flag_fails_in_one_line_naming_the_current_one(cls, argv, new, capsys):
    module = {"gigpo": gigpo, "dapo": dapo, "gcd": gcd, "ppo": ppo}[cls]
    with pytest.raises(SystemExit) as e:
        parse(type(module.defaults()), argv + ["--eval-episodes", "0"], default=module.defaults())
    assert e.value.code == 2 and capsys.readouterr().err == f"error: {argv[0].split('=')[0]} was renamed {new}\n"


def test_method_flags_and_build_take_the_current_names(capsys):
    no = ["--eval-episodes", "0"]
    assert parse(gigpo.GiGPOTrainConfig, ["--gigpo.no-step-std-normalize", *no]).gigpo.step_std_normalize is False
    assert parse(dapo.DAPOTrainConfig, ["--dapo.spread-tol", "0.5", *no], default=dapo.defaults()).dapo.spread_tol == 0.5
    judge = parse(gcd.GCDTrainConfig, ["--gcd.judge-loss.eps-low", "0.1", "--gcd.judge-loss.eps-high=0.3",
                                       "--gcd.judge-loss.beta", "0.05", "--gcd.judge-loss.aggregation", "token-mean",
                                       *no]).gcd.judge_loss
    assert (judge.eps_low, judge.eps_high, judge.beta, judge.aggregation) == (0.1, 0.3, 0.05, "token-mean")
    assert build(gcd.GCDTrainConfig, gcd={"judge_loss": {"beta": 0.2}}).gcd.judge_loss.beta == 0.2
    with pytest.raises(TypeError, match=r"judge_beta is now gcd.judge_loss.beta"):
        build(gcd.GCDTrainConfig, gcd={"judge_beta": 0.2})
    got = parse(ppo.PPOTrainConfig, ["--ppo.gae-gamma", "0.9", "--ppo.gae-lambda=0.8", *no], default=ppo.defaults()).ppo
    assert (got.gae_gamma, got.gae_lambda) == (0.9, 0.8)
    with pytest.raises(TypeError, match=r"'tol' \(tol is now dapo.spread_tol\)"):
        build(dapo.DAPOTrainConfig, tol=0.5)  # the flat name is VSPO's: DAPO's former one fails naming the new
    with pytest.raises(SystemExit):
        parse(gcd.GCDTrainConfig, ["--gcd.judge-loss.eps-low", "1.2"])
    assert capsys.readouterr().err == "error: --gcd.judge-loss.eps-low must be in [0, 1), got 1.2\n"


def test_the_losses_are_one_class_and_the_judges_is_its_own_instance():
    from agentgym.train.methods import GCD

    config = gcd.defaults()
    assert type(config.optim.loss) is type(config.gcd.judge_loss) is LossConfig
    assert config.optim.loss_config() is config.optim.loss
    assert GCD(config.gcd).sample_kinds["judge"].loss is config.gcd.judge_loss
    assert (config.gcd.judge_loss.beta, config.gcd.judge_loss.aggregation) == (0.0, "seq-mean")
    assert (config.optim.loss.beta, config.optim.loss.aggregation) == (0.001, "token-mean")


def test_the_rollout_settings_are_the_runtimes_and_its_former_internal_knobs_are_flags():
    assert isinstance(TrainConfig().rollout, RolloutConfig)
    r = parse(TrainConfig, ["--rollout-mode", "overlapped", "--batch-wait", "0", "--max-generate-batch", "4",
                            "--eval-episodes", "0"]).rollout
    assert (r.rollout_mode, r.batch_wait, r.max_generate_batch) == ("overlapped", 0.0, 4)
    assert {s.flag for s in settings(TrainConfig) if s.hidden} == {"--max-turns", "--max-action-chars"}
    assert build(TrainConfig, max_turns=3).rollout.max_turns == 3  # for code: the env's max_turns is the flag


def test_the_cold_start_is_an_sft_config_filled_from_the_run():
    config = build(TrainConfig, seed=4, quiet=True, layout="window", window=1, max_prompt_tokens=900,
                   output_dir="runs/x", cold_start={"num_steps": 20})
    assert type(config.cold_start) is SFTConfig
    run = config.cold_start_config()
    assert isinstance(run, SFTRunConfig) and run.env is config.env and run.model is config.model
    assert (run.chat.layout, run.chat.window, run.chat.max_prompt_tokens) == ("window", 1, 900)
    assert (run.run.seed, run.run.quiet, run.run.output_dir) == (4, True, "runs/x/sft")
    s = run.sft  # ToolQA's recipe where the run left a setting unset
    assert (s.num_steps, s.num_episodes, s.batch_size, s.micro_batch_size, s.chatty_answers, s.log_every) == (
        20, 2048, 8, 8, 0.6, 10)


def test_a_default_cold_start_recipe_is_the_one_cached_runs_recorded():
    # a cold start cached before the cold start was an SFTConfig is reused: the same recipe
    from agentgym.train.coldstart.sft import _recipe

    recipe = _recipe(TrainConfig().cold_start_config())
    assert recipe["sft"] == {"num_episodes": 2048, "num_steps": 3600, "batch_size": 8, "micro_batch_size": 8,
                             "learning_rate": 0.003, "lr_schedule": "cosine", "warmup_steps": 10,
                             "max_grad_norm": 1.0, "chatty_answers": 0.6}
    assert (recipe["layout"], recipe["window"], recipe["seed"]) == ("concat", 2, 0)


def test_the_exploring_cold_start_is_a_cold_start_flag_and_part_of_its_recipe(capsys):
    # trainers/sft.py --explore is an SFTConfig setting, so an RL run's cold start takes it too
    from agentgym.train.coldstart.sft import _recipe

    config = parse(TrainConfig, ["--cold-start.explore", "0.3", "--eval-episodes", "0"])
    assert config.cold_start.explore == 0.3 and config.cold_start_config().sft.explore == 0.3
    assert _recipe(config.cold_start_config())["sft"]["explore"] == 0.3  # a cached plain cold start is not reused
    assert parse(SFTRunConfig, ["--explore", "0.5"]).sft.explore == 0.5
    for cls, flag in ((TrainConfig, "--cold-start.explore"), (SFTRunConfig, "--explore")):
        with pytest.raises(SystemExit):
            parse(cls, [flag, "1.5", "--eval-episodes", "0"] if cls is TrainConfig else [flag, "1.5"])
        assert capsys.readouterr().err == f"error: {flag} is a fraction in [0, 1], got 1.5\n"


def test_the_sft_run_reuses_the_run_and_layout_groups():
    groups = {f.name: f.type for f in fields(SFTRunConfig)}
    assert set(groups) == {"env", "model", "sft", "chat", "run", "lora"}
    sft_run = SFTRunConfig()
    assert type(sft_run.run) is BaseRunConfig and issubclass(RunConfig, BaseRunConfig)
    assert type(sft_run.chat) is LayoutConfig and issubclass(RolloutConfig, LayoutConfig)
    for sub, base in ((RunConfig, BaseRunConfig), (RolloutConfig, LayoutConfig)):
        assert not set(vars(sub)["__annotations__"]) & set(vars(base)["__annotations__"])  # nothing redeclared
    # trainers/sft.py's flags keep their spelling
    flags = {s.flag for s in settings(SFTRunConfig)}
    assert {"--num-steps", "--layout", "--window", "--max-prompt-tokens", "--seed", "--output-dir"} <= flags
    # sft.py's defaults are the env's recipe: on ToolQA-v0 the main job's cold start, as its recipe says
    from agentgym.train.coldstart.sft import _recipe

    assert _recipe(sft_run) == _recipe(TrainConfig().cold_start_config())


class SeesSampling(Policy):
    """The trained policy, recording the sampling settings of every call."""

    def __init__(self, inner):
        self.inner, self.sampling, self.seen = inner, inner.sampling, []

    def generate(self, prompts, sampling=None):
        self.seen.append(sampling)
        return self.inner.generate(prompts, sampling)


def test_the_temperature_flag_reaches_the_rollout_sampler_and_the_held_out_evaluation(tmp_path):
    from agentgym.train.hooks import TrainerExtension
    from agentgym.train.loop import run_eval, train

    config = parse(TrainConfig, ["--model", "tiny", "--preset", "none", "--env-kwargs", TOOLQA_SMALL,
                                 "--temperature", "0.7", "--top-k", "5", "--max-new-tokens", "6", "--num-steps", "1",
                                 "--num-groups", "1", "--group-size", "2", "--eval-episodes", "0",
                                 "--cold-start.num-steps", "0", "--output-dir", str(tmp_path), "--save-every", "0",
                                 "--no-progress", "--quiet", "--no-tensorboard"])
    sampling = config.rollout.sampling
    assert (sampling.temperature, sampling.top_k, sampling.max_new_tokens) == (0.7, 5, 6)

    class Sees(TrainerExtension):
        name = "sees"

        def after_rollout(self, ctx, episodes):
            self.collector, self.policy = ctx.collect, ctx.policy  # the collector plays ctx.collect
            return episodes

    sees = Sees()
    train(config, [sees])
    # one object: what the flags parsed is what the rollout plays with and samples by
    assert sees.collector.cfg is config.rollout and sees.collector.sampling is sampling
    assert sees.policy.sampling is sampling
    spy = SeesSampling(sees.policy)
    run_eval(build(TrainConfig, _default=config, eval_episodes=1), spy, {"question_kinds": ["single_hop"],
                                                                          "max_turns": 2})
    assert spy.seen and all(s == sampling for s in spy.seen)


def test_agentgym_eval_parses_the_trainers_sampling_and_says_why_a_default_differs():
    from agentgym.train.evaluate import EVAL_NOTES, _parser

    actions = {a.dest: a for a in _parser()._actions}
    trainer = {**{f.name: getattr(TrainConfig().rollout.sampling, f.name) for f in fields(SamplingConfig)},
               "window": TrainConfig().rollout.window}
    docs = {s.path[-1]: s.doc for s in settings(TrainConfig)}
    for name, default in trainer.items():
        action = actions[name]
        assert action.help.startswith(docs[name])
        if action.default != default:
            assert EVAL_NOTES[name] in action.help  # each difference says why
    assert {"model", "base_url", "api_key", "env_id", "preset", "env_kwargs", "split", "num_episodes", "batch_size",
            "seed", "prs_stage", "device", "output"} <= set(actions)  # the flags it took before


def test_agentgym_eval_sends_the_sampling_flags_to_the_policy(chat_server, capsys):
    from agentgym.train.evaluate import main

    chat_server.reply = lambda body: "<answer>x</answer>"
    assert main(["--base-url", chat_server.url, "--model", "m", "--env-kwargs", TOOLQA_SMALL, "--num-episodes", "1",
                 "--temperature", "0.7", "--top-p", "0.9", "--max-new-tokens", "9"]) == 0
    bodies = [body for path, _, body in chat_server.requests if path == "/v1/chat/completions"]
    assert bodies and all((b["temperature"], b["top_p"], b["max_tokens"]) == (0.7, 0.9, 9) for b in bodies)
    with pytest.raises(SystemExit) as e:
        main(["--model", "m", "--temperature", "-1"])
    assert e.value.code == 2
    assert capsys.readouterr().err == "agentgym eval: error: --temperature must be a finite number >= 0, got -1.0\n"


@pytest.mark.parametrize("module", [vspo, gigpo, dapo, ppo, gcd])
def test_a_recipe_sets_the_run_and_the_flags_go_over_it(module, tmp_path, capsys):
    # (a small generated set under the recipe's env, so the env check makes no 16,000-game set)
    out = ["--output-dir", str(tmp_path / "run"), "--env-kwargs", '{"data_path": "generated:40:tiny"}']
    base = parse(type(module.defaults()), ["--recipe", "alfworld-l0", *out], default=module.defaults())
    assert (base.env.env_id, base.env.preset, base.env.split, base.model.model) == (
        "ALFWorld-v0", "tiny-rooms", "L0", "tiny-small")
    assert (base.cold_start.expert_split, base.cold_start.num_episodes, base.eval.eval_split) == ("train", 512, "L0,L1")
    # the method's own defaults stay (the recipe sets only what it names)
    assert type(base) is type(module.defaults())
    seeded = parse(type(module.defaults()), ["--recipe=alfworld-l0", "--seed", "1", *out], default=module.defaults())
    assert seeded.run.seed == 1 and build(type(base), _default=seeded, seed=0) == base  # --seed changes only the seed
    for argv, said in ((["--recipe", "nope"], "error: --recipe 'nope' is not a recipe; choose one of alfworld-l0, alfworld-l0-scored, scienceworld-find\n"),
                       (["--recipe"], "error: --recipe needs a name: one of alfworld-l0, alfworld-l0-scored, scienceworld-find\n")):
        with pytest.raises(SystemExit) as e:
            parse(type(module.defaults()), argv + out, default=module.defaults())
        assert e.value.code == 2 and capsys.readouterr().err == said
