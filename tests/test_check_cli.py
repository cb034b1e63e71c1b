"""`rootrank check` through `rootrank.check.cli` in-process: exit codes, formats, --fix, discovery."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from rootrank.check import cli

BAD = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
COMPILED = ("import torch\nfrom torch.utils.checkpoint import checkpoint\n"
            "@torch.compile\ndef step(x):\n    return checkpoint(f, x, use_reentrant=True)\n")


def environment(root: Path, **versions: str) -> str:
    """A virtual environment folder holding only package metadata (what `--python` reads)."""
    site = root / "env" / "lib" / "python3.11" / "site-packages"
    for name, version in versions.items():
        (site / f"{name}-{version}.dist-info").mkdir(parents=True)
        (site / f"{name}-{version}.dist-info" / "METADATA").write_text(f"Name: {name}\nVersion: {version}\n")
    return str(root / "env")


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(list(argv)))


def test_text_output_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "clean.py").write_text("print('no checkpointing here')\n")
    assert run(str(tmp_path / "clean.py")) == cli.EXIT_OK
    assert run(str(tmp_path)) == cli.EXIT_FOUND
    out = capsys.readouterr().out
    assert out.startswith(f"{tmp_path / 'train.py'}:2:5: checkpoint.use-reentrant-explicit [*] ")


def test_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.py").write_text(BAD)
    run("--format", "json", str(tmp_path / "train.py"))
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "rootrank.check/1"
    (finding,) = data["findings"]
    assert set(finding) >= {"rule", "severity", "path", "line", "column", "end_line", "end_column", "message", "fix"}
    assert finding["severity"] in ("error", "warning", "info")
    # One fix model: `fix` is the preferred fix (the first safe one: what --fix applies), `fixes` all of
    # them with their applicability, preferred first.
    assert finding["fix"]["applicability"] == "safe"
    assert finding["fix"]["edits"][0]["text"] == ", use_reentrant=True"
    assert set(finding["fix"]["edits"][0]) == {"line", "column", "end_line", "end_column", "text"}
    assert [f["applicability"] for f in finding["fixes"]] == ["safe", "unsafe"]
    assert finding["fixes"][0] == finding["fix"]
    assert finding["alternative_fixes"][0]["applicability"] == "unsafe"


FROZEN_INPUTS = """\
import torch
from torch.utils.checkpoint import checkpoint


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.embed.weight.requires_grad_(False)
        self.block = torch.nn.Linear(4, 4)

    def forward(self, ids):
        h = self.embed(ids)
        return checkpoint(self.block, h)
"""


def test_a_fix_that_keeps_the_defect_is_never_offered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reentrant checkpoint with frozen inputs: `use_reentrant=True` would "keep today's behaviour", which
    is the bug (the block gets no gradient). The only fix left at that site is the one removing the error,
    and text, JSON and --fix agree on it."""
    path = tmp_path / "train.py"
    path.write_text(FROZEN_INPUTS)
    run("--format", "json", str(path))
    findings = json.loads(capsys.readouterr().out)["findings"]
    by_rule = {f["rule"]: f for f in findings}
    assert by_rule["checkpoint.reentrant-no-grad-inputs"]["severity"] == "error"
    texts = [e["text"] for f in findings for fix in f["fixes"] for e in fix["edits"]]
    assert ", use_reentrant=True" not in texts
    assert by_rule["checkpoint.use-reentrant-explicit"]["fix"]["applicability"] == "unsafe"
    run(str(path))
    assert "[unsafe fix]" in capsys.readouterr().out
    assert run("--fix", str(path)) == cli.EXIT_FOUND
    assert path.read_text() == FROZEN_INPUTS  # no safe fix: nothing written
    run("--fix", "--unsafe-fixes", str(path))
    capsys.readouterr()
    fixed = path.read_text()
    assert "checkpoint(self.block, h, use_reentrant=False)" in fixed
    run("--format", "json", str(path))
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] == "error"]


def test_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.py").write_text(COMPILED)
    run("--format", "sarif", str(tmp_path / "train.py"))
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0"
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "checkpoint.reentrant-compile"
    assert log["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    assert result["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "False"


def test_fix_is_safe_only_and_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(BAD + "import torch\n" + COMPILED.split("\n", 2)[2])
    run("--fix", str(path))
    once = path.read_text()
    assert "checkpoint(f, x, use_reentrant=True)" in once  # the safe fix
    assert "use_reentrant=False" not in once  # never an unsafe one without --unsafe-fixes
    run("--fix", str(path))
    assert path.read_text() == once
    run("--fix", "--unsafe-fixes", str(path))
    assert path.read_text().count("use_reentrant=False") == 1  # the compiled one; the other is explicit now


def test_select_ignore(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    assert run("--select", "checkpoint.overhead,checkpoint.partial-coverage", str(tmp_path)) == cli.EXIT_OK
    assert run("--ignore", "checkpoint", str(tmp_path)) == cli.EXIT_OK
    assert run("--select", "checkpoint", str(tmp_path)) == cli.EXIT_FOUND


def test_unreadable_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(str(tmp_path / "missing.py")) == cli.EXIT_ERROR
    assert capsys.readouterr().err.strip().endswith("missing.py: no such file or directory")
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\nfrom torch.utils.checkpoint import checkpoint\n")
    (tmp_path / "train.py").write_text(BAD)
    assert run(str(tmp_path)) == cli.EXIT_ERROR  # the other file is still checked and printed
    captured = capsys.readouterr()
    assert "train.py:2:5" in captured.out
    assert "latin1.py: not UTF-8 (byte 0xe9 at offset 5)" in captured.err
    assert "Traceback" not in captured.err


def test_syntax_error_reported_once_and_others_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a_broken.py").write_text("from torch.utils.checkpoint import checkpoint\ndef f(:\n")
    (tmp_path / "b_train.py").write_text(BAD)
    assert run(str(tmp_path)) == cli.EXIT_FOUND
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in out] == ["syntax-error", "checkpoint.use-reentrant-explicit"]


def test_directories_walk_configs_and_skip_venvs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "args.yaml").write_text("gradient_checkpointing: true\n")
    launch = ("torchrun pretrain_gpt.py --num-layers 8 --recompute-granularity full --recompute-method block "
              "--recompute-num-layers 2\n")
    (tmp_path / "launch.sh").write_text(launch)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "lib.py").write_text(BAD)
    (tmp_path / "notes.txt").write_text(BAD)
    run("--python", environment(tmp_path, transformers="4.57.6"), str(tmp_path))
    out = capsys.readouterr().out
    assert "args.yaml:1:1: checkpoint.use-reentrant-explicit" in out
    column = launch.index("--recompute-num-layers") + 1
    assert f"launch.sh:1:{column}: checkpoint.partial-coverage checkpointing covers 2 of 8 layers" in out
    assert ".venv" not in out and "notes.txt" not in out


def test_accelerate_config_and_script_checkpointing_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "accelerate.yaml").write_text("distributed_type: FSDP\nfsdp_config:\n"
                                              "  fsdp_activation_checkpointing: true\n")
    (tmp_path / "train.py").write_text("model.gradient_checkpointing_enable(\n"
                                       "    gradient_checkpointing_kwargs={'use_reentrant': False})\n")
    assert run(str(tmp_path / "accelerate.yaml")) == cli.EXIT_OK  # alone, nothing to say
    assert run(str(tmp_path)) == cli.EXIT_FOUND
    out = capsys.readouterr().out
    assert "accelerate.yaml:3:3: checkpoint.fsdp-double-checkpoint" in out
    assert "train.py:1 also turns on transformers' gradient checkpointing" in out


def test_unsafe_fixes_alone_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "train.py"
    path.write_text(BAD)
    assert run("--unsafe-fixes", str(path)) == cli.EXIT_FOUND
    assert path.read_text() == BAD
    assert "1 fixable with --fix --unsafe-fixes" in capsys.readouterr().err


def test_stdin_with_a_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"gradient_checkpointing: true\n")))
    env = environment(tmp_path, transformers="4.57.6")
    assert run("--python", env, "--stdin-filename", "args.yaml", "-") == cli.EXIT_FOUND
    assert capsys.readouterr().out.startswith("args.yaml:1:1: checkpoint.use-reentrant-explicit ")


def test_versions_come_from_python_and_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "args.yaml").write_text("gradient_checkpointing: true\n")
    old = environment(tmp_path / "old", transformers="4.57.6")
    new = environment(tmp_path / "new", transformers="5.24.0")
    assert run("--python", old, str(tmp_path / "args.yaml")) == cli.EXIT_FOUND
    captured = capsys.readouterr()
    assert captured.out.rstrip().endswith("[transformers 4.57.6]")
    assert "Versions assumed: transformers 4.57.6 (--python: " in captured.err
    run("--format", "json", "--python", old, str(tmp_path / "args.yaml"))
    assert json.loads(capsys.readouterr().out)["findings"][0]["assumes"] == ["transformers 4.57.6"]
    # transformers >= 5.0 checkpoints non-reentrant by default: nothing to report, nothing to "keep".
    assert run("--python", new, str(tmp_path / "args.yaml")) == cli.EXIT_OK


def test_unknown_version_is_at_most_a_warning_naming_the_versions(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.py").write_text(
        "from peft import get_peft_model\nfrom transformers import TrainingArguments\n"
        "model = get_peft_model(model, config)\nargs = TrainingArguments('o', gradient_checkpointing=True)\n")
    bare = environment(tmp_path, torch="2.13.0")  # no transformers: its version is unknown
    run("--format", "json", "--python", bare, str(tmp_path / "train.py"))
    findings = json.loads(capsys.readouterr().out)["findings"]
    peft = next(f for f in findings if f["rule"] == "checkpoint.reentrant-no-grad-inputs")
    assert peft["severity"] == "warning" and peft["assumes"] == ["transformers: not found"]
    assert "applies to transformers <5.0.0" in peft["message"]
    explicit = next(f for f in findings if f["rule"] == "checkpoint.use-reentrant-explicit")
    # No "keeps today's behaviour" fix where today's behaviour is unknown.
    assert all(fix["applicability"] != "safe" for fix in [explicit["fix"], *explicit.get("alternative_fixes", [])])


def test_bad_python_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.py").write_text(BAD)
    assert run("--python", str(tmp_path / "nowhere" / "bin" / "python"), str(tmp_path)) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("rootrank: --python ") and err.count("\n") == 1
def test_an_accelerate_config_pairs_only_with_scripts_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = "distributed_type: FSDP\nfsdp_config:\n  fsdp_activation_checkpointing: true\n"
    script = "from transformers import TrainingArguments\nargs = TrainingArguments('o', gradient_checkpointing=True)\n"
    (tmp_path / "examples" / "configs").mkdir(parents=True)
    (tmp_path / "examples" / "configs" / "fsdp.yaml").write_text(config)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text(script)
    run("--select", "checkpoint.fsdp-double-checkpoint", str(tmp_path))
    assert "fsdp-double-checkpoint" not in capsys.readouterr().out  # another corner of the repository
    (tmp_path / "examples" / "train.py").write_text(script)
    run("--select", "checkpoint.fsdp-double-checkpoint", str(tmp_path))
    assert "examples/configs/fsdp.yaml:3:3: checkpoint.fsdp-double-checkpoint" in capsys.readouterr().out


def test_configs_read_by_the_projects_own_argument_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """open-instruct's shape: its YAML configs are parsed into its own dataclass (HfArgumentParser with
    `allow_extra_keys=False`), whose `gradient_checkpointing` its script turns into the enable call. The
    Trainer never reads the config: no Trainer-default finding on it, and `--fix` must not add a
    `gradient_checkpointing_kwargs` key the parser would reject."""
    old = environment(tmp_path / "env", transformers="4.57.6")
    config = "learning_rate: 2.0e-5\ngradient_checkpointing: true\nddp_find_unused_parameters: true\n"
    project = tmp_path / "project"
    (project / "configs").mkdir(parents=True)
    (project / "configs" / "sft.yaml").write_text(config)
    (project / "finetune.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass FlatArguments:\n"
        "    learning_rate: float = 2e-5\n    gradient_checkpointing: bool = False\n\n\n"
        "def main(args, model):\n    if args.gradient_checkpointing:\n"
        "        model.gradient_checkpointing_enable()\n")
    assert run("--python", old, "--format", "json", str(project)) == cli.EXIT_FOUND
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["path"].rsplit("/", 1)[-1], f["rule"]) for f in findings] == \
        [("finetune.py", "checkpoint.use-reentrant-explicit")]  # the enable call the script makes
    run("--python", old, "--fix", str(project))
    assert (project / "configs" / "sft.yaml").read_text() == config
    # A TrainingArguments subclass is the Trainer's: its configs are checked as the Trainer reads them.
    (project / "finetune.py").write_text(
        "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n\n\n@dataclass\n"
        "class Args(TrainingArguments):\n    gradient_checkpointing: bool = True\n")
    run("--python", old, "--format", "json", str(project))
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert {"checkpoint.use-reentrant-explicit", "checkpoint.reentrant-ddp"} <= rules
