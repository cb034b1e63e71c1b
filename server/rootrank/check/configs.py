"""Checks over training configs and launch scripts: Trainer arguments in JSON/YAML, Accelerate and
DeepSpeed configs, and Megatron launch scripts (`*.sh`).

Findings use the same failure-entry ids as the Python rules. Positions come from the parser where it
keeps them (YAML marks) and from the key's first spelling otherwise (JSON); a config that cannot be
parsed gives one `syntax-error` finding, as a Python file does.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from rootrank.check import hf
from rootrank.check.bounds import Cancelled, alias_expansion, over_parse_cap, skipped, stop_if
from rootrank.check.source import Locator
from rootrank.model import Applicability, Edit, Finding, Fix, Severity
from rootrank.stack import facts

USE_REENTRANT = "checkpoint.use-reentrant-explicit"
DOUBLE = "checkpoint.fsdp-double-checkpoint"
USE_CACHE = "checkpoint.hf-use-cache"
DDP = "checkpoint.reentrant-ddp"
PARTIAL = "checkpoint.partial-coverage"
DEEPSPEED = "checkpoint.deepspeed-config"
SYNTAX_ERROR = "syntax-error"
DEFAULT_SEVERITY = {USE_REENTRANT: Severity.WARNING, DOUBLE: Severity.WARNING, USE_CACHE: Severity.WARNING,
                    DDP: Severity.ERROR, PARTIAL: Severity.WARNING, DEEPSPEED: Severity.INFO}
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Key:
    """Where a key sits: (line, column) of the key and the end of its value, 1-based characters."""

    line: int
    column: int
    end_line: int
    end_column: int
    value: Any
    block: bool = True  # YAML block style (a new line can be inserted after it)
    value_line: int = 0  # where the value starts (0: unknown)
    value_column: int = 0

    def replace_value(self, text: str) -> Edit | None:
        if not self.value_line:
            return None
        return Edit(self.value_line, self.value_column, self.end_line, self.end_column, text)


class RefusedError(ValueError):
    """A config that is not parsed further: its aliases expand beyond the budget (check/bounds.py)."""


class _Config:
    """A parsed config: the data and a way to find where a key of a mapping is written."""

    def __init__(self, path: str, source: str, locator: Locator, cancelled: Cancelled | None = None) -> None:
        self.path = path
        self.source = source
        self.locator = locator
        self.json = path.lower().endswith(".json")
        self.data: Any = None
        self.keys: dict[tuple[int, str], Key] = {}
        self.versions: dict[str, str] = {}  # installed library versions; missing: unknown
        if self.json:
            self.data = json.loads(source)
        else:
            node = yaml.compose(source, Loader=_Loader)
            # Aliases are shared in the node graph but copied out by merge keys while constructing, and
            # walked once per use by anything that follows the data: measure first, in linear time.
            refused = alias_expansion(node, cancelled=cancelled) if node is not None else None
            if refused is not None:
                raise RefusedError(refused)
            stop_if(cancelled)
            self.data = yaml.load(source, Loader=_Loader) if node is not None else None
            if node is not None:
                self._index(node, self.data, set())

    def _index(self, node: yaml.Node, data: Any, seen: set[int]) -> None:
        # `seen`: a mapping reached again through an alias keeps the positions of its first spelling.
        if isinstance(node, yaml.MappingNode) and isinstance(data, dict) and id(node) not in seen:
            seen.add(id(node))
            for key_node, value_node in node.value:
                key = key_node.value
                if key in data:
                    self.keys[(id(data), key)] = Key(
                        key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                        value_node.end_mark.line + 1, value_node.end_mark.column + 1, data[key],
                        not node.flow_style, value_node.start_mark.line + 1, value_node.start_mark.column + 1)
                    self._index(value_node, data[key], seen)

    def key(self, mapping: dict[str, Any], name: str) -> Key:
        found = self.keys.get((id(mapping), name))
        if found is not None:
            return found
        # JSON keeps no positions: the key's first spelling, and the end of its scalar value.
        match = re.search(rf'"{re.escape(name)}"\s*:\s*', self.source)
        if match is None:
            return Key(1, 1, 1, 1, mapping.get(name))
        line = self.locator.line_of(match.start())
        column = match.start() - self.locator.starts[line - 1] + 1
        value = re.compile(r'true|false|null|-?\d[\d.eE+-]*|"(?:[^"\\]|\\.)*"').match(self.source, match.end())
        end = value.end() if value else match.end()
        end_line = self.locator.line_of(max(end - 1, 0))
        start_line = self.locator.line_of(match.end())
        return Key(line, column, end_line, end - self.locator.starts[end_line - 1] + 1, mapping.get(name), True,
                   start_line if value else 0, match.end() - self.locator.starts[start_line - 1] + 1)

    def finding(self, rule: str, key: Key, message: str, fixes: tuple[Fix, ...] = (),
                assumed: facts.Answer | None = None) -> Finding:
        from rootrank.check import severity_of

        assumes, at_most, note = hf.qualify(assumed)
        severity = severity_of(rule, DEFAULT_SEVERITY[rule])
        if at_most is not None and severity is Severity.ERROR:
            severity = at_most
        return Finding(rule, severity, self.path, key.line, key.column,
                       key.line, key.column + len(self._key_text(key)), message + note, fixes, assumes=assumes)

    def _key_text(self, key: Key) -> str:
        text = self.locator.line_text(key.line)[key.column - 1:]
        match = re.match(r'"[^"]*"|[\w.\-]+', text)
        return match.group(0) if match else ""


def check_config(source: str, path: str, locator: Locator,
                 versions: Mapping[str, str] | None = None, cancelled: Cancelled | None = None) -> list[Finding]:
    if path.lower().endswith(".sh"):
        return list(_megatron(source, path, locator))
    try:
        config = _Config(path, source, locator, cancelled)
        config.versions = dict(versions or {})
    except RefusedError as refused:
        return [skipped(path, str(refused))]
    except (ValueError, yaml.YAMLError, RecursionError) as error:
        line = getattr(getattr(error, "problem_mark", None), "line", None)
        line = (line + 1) if isinstance(line, int) else getattr(error, "lineno", 1)
        return [Finding(SYNTAX_ERROR, Severity.ERROR, path, line, 1, line, 1,
                        f"cannot parse: {str(error).splitlines()[0] if str(error) else type(error).__name__}")]
    findings: list[Finding] = []
    for mapping in _mappings(config.data, set()):
        stop_if(cancelled)
        findings.extend(_trainer_arguments(config, mapping))
        findings.extend(_accelerate(config, mapping))
        findings.extend(_deepspeed(config, mapping))
    return findings


def _mappings(data: Any, seen: set[int], depth: int = 0) -> Iterator[dict[str, Any]]:
    """Every mapping of the document once: Trainer arguments are often nested (`training_args:`,
    `trainer:`), and a mapping or list shared through YAML aliases is one object, visited once."""
    if not isinstance(data, (dict, list)) or depth >= 20 or id(data) in seen:
        return
    seen.add(id(data))
    if isinstance(data, dict):
        yield data
    for value in data.values() if isinstance(data, dict) else data:
        yield from _mappings(value, seen, depth + 1)


# TrainingArguments fields that say a mapping is the Trainer's arguments.
_TRAINER_KEYS = frozenset({"output_dir", "per_device_train_batch_size", "per_device_eval_batch_size",
                           "gradient_accumulation_steps", "learning_rate", "num_train_epochs", "max_steps",
                           "logging_steps", "save_steps", "eval_strategy", "evaluation_strategy", "save_strategy",
                           "report_to", "bf16", "fp16", "optim", "lr_scheduler_type", "warmup_ratio", "warmup_steps",
                           "weight_decay", "deepspeed", "fsdp", "torch_compile", "gradient_checkpointing_kwargs",
                           "activation_checkpointing_kwargs", "run_name", "seed"})


def _trainer_arguments(config: _Config, args: dict[str, Any]) -> Iterator[Finding]:
    # Either spelling (transformers >= 5.23 renamed the fields); the new one wins, as TrainingArguments resolves.
    # (`activation_checkpointing` as a mapping is DeepSpeed's section, not the Trainer's flag.)
    flag = next((name for name in reversed(hf.FLAGS) if isinstance(args.get(name), bool)), None)
    if flag is None or args.get(flag) is not True:
        return
    if flag == hf.NEW and not _TRAINER_KEYS & set(args):
        # `activation_checkpointing: true` is also Composer's / llm-foundry's FSDP flag (`fsdp_config:` beside
        # `sharding_strategy`, `activation_checkpointing_reentrant`): the new Trainer name counts only in a
        # mapping that holds other TrainingArguments fields.
        return
    enabled = config.key(args, flag)
    kwargs_key = next((name for name in reversed(hf.KWARGS) if name in args), None)
    kwargs = args.get(kwargs_key) if kwargs_key else None
    default = hf.default_reentrant(config.versions)
    if isinstance(kwargs, dict) and "use_reentrant" in kwargs:
        reentrant, assumed = kwargs.get("use_reentrant") is not False, None
    elif isinstance(kwargs, dict) and kwargs and not set(kwargs) - set(hf.OWN_KWARGS):
        reentrant, assumed = hf.default_is_reentrant(default) is not False, default  # the Trainer passes None on
    elif kwargs_key is not None and kwargs is not None:
        reentrant, assumed = True, None  # a dict without `use_reentrant` reaches torch: its reentrant default
    else:
        reentrant, assumed = hf.default_is_reentrant(default) is not False, default
    name = hf.kwargs_name(flag)
    if kwargs_key is None and reentrant:
        yield config.finding(USE_REENTRANT, enabled, (
            f"`{flag}: true` without `{name}`: transformers checkpoints "
            f"reentrant (`use_reentrant=True`); add `{name}: {{use_reentrant: false}}`"),
            _kwargs_fixes(config, enabled, name, keep=default.known), assumed)
    fsdp_config = args.get("fsdp_config")
    fsdp = args.get("fsdp")
    fsdp_text = " ".join(fsdp) if isinstance(fsdp, list) else fsdp
    if isinstance(fsdp_config, dict) and fsdp_config.get("activation_checkpointing") is True:
        yield config.finding(DOUBLE, enabled, (
            f"`{flag}: true` together with `fsdp_config.activation_checkpointing`: every block would "
            "be checkpointed twice, and transformers refuses the combination; keep only FSDP's"))
    elif isinstance(fsdp_text, str) and ("full_shard" in fsdp_text or "hybrid_shard" in fsdp_text):
        yield config.finding(DOUBLE, enabled, (
            f"`{flag}: true` with FSDP full/hybrid shard: the recomputation all-gathers the parameters again "
            "in backward; use `fsdp_config: {activation_checkpointing: true}` instead"))
    elif (fsdp is True or (isinstance(fsdp_text, str) and fsdp_text.strip())) \
            and facts.answer("transformers.fsdp-bool", config.versions).is_(False) is not True:
        # transformers >= 5.10.1: `fsdp: true`, and the redundant-AllGather warning for any FSDP
        yield config.finding(DOUBLE, enabled, (
            f"`{flag}: true` with FSDP: the recomputation all-gathers the parameters again "
            "in backward; use `fsdp_config: {activation_checkpointing: true}` instead"))
    if args.get("use_cache") is True:
        key = config.key(args, "use_cache")
        edit = key.replace_value("false")
        # Safe: a training config; transformers already trains with the cache off under checkpointing.
        fixes = (Fix("Set `use_cache: false`", Applicability.SAFE, (edit,)),) if edit else ()
        yield config.finding(USE_CACHE, key, (
            "`use_cache: true` while gradient checkpointing is on: transformers turns the KV cache off again with a "
            "warning on every step; set `use_cache: false` for training"), fixes)
    if reentrant and args.get("ddp_find_unused_parameters") is True:
        yield config.finding(DDP, config.key(args, "ddp_find_unused_parameters"), (
            "`ddp_find_unused_parameters: true` with reentrant gradient checkpointing: DDP marks parameters ready "
            "twice ('Expected to mark a variable ready only once'); set "
            f"`{name}: {{use_reentrant: false}}`"), assumed=assumed)


def _kwargs_fixes(config: _Config, key: Key, name: str, keep: bool) -> tuple[Fix, ...]:
    fixes = []
    # "Keeps today's behaviour" only where transformers' version is known to default to reentrant.
    choices = [(False, Applicability.UNSAFE, "recommended; unsafe: recomputation differs")]
    if keep:
        choices.append((True, Applicability.SAFE, "keeps today's behaviour"))
    for value, applicability, note in choices:
        edit = _insert_kwargs(config, key, value, name)
        if edit is not None:
            fixes.append(Fix(f"Add `{name}` with `use_reentrant={value}` ({note})", applicability, (edit,)))
    return tuple(fixes)


def _insert_kwargs(config: _Config, key: Key, value: bool, name: str) -> Edit | None:
    if config.json:
        text = f', "{name}": {{"use_reentrant": {str(value).lower()}}}'
        return Edit(key.end_line, key.end_column, key.end_line, key.end_column, text)
    if not key.block:
        return None
    line = config.locator.line_text(key.line)
    indent = line[: key.column - 1]
    if indent.strip(" "):
        return None  # the key shares its line with something else (`- gradient_checkpointing: true`)
    end = len(line) + 1
    newline = "\r\n" if "\r\n" in config.source else "\n"
    text = f"{newline}{indent}{name}: {{use_reentrant: {str(value).lower()}}}"
    return Edit(key.line, end, key.line, end, text)


def _accelerate(config: _Config, data: dict[str, Any]) -> Iterator[Finding]:
    fsdp = data.get("fsdp_config")
    if not (isinstance(fsdp, dict) and fsdp.get("fsdp_activation_checkpointing") is True):
        return
    if any(data.get(name) is True for name in hf.FLAGS):
        yield config.finding(DOUBLE, config.key(fsdp, "fsdp_activation_checkpointing"), (
            "`fsdp_activation_checkpointing: true` together with `gradient_checkpointing: true`: every block is "
            "checkpointed twice (FSDP's wrapper and transformers'); keep only FSDP's"))


def _deepspeed(config: _Config, data: dict[str, Any]) -> Iterator[Finding]:
    section = data.get("activation_checkpointing")
    if not isinstance(section, dict):
        return
    # `cpu_checkpointing` without `partition_activations` does offload (version-facts topic
    # deepspeed.cpu-checkpointing): nothing to report there.
    if data.get("gradient_checkpointing") is True:
        yield config.finding(DEEPSPEED, config.key(data, "activation_checkpointing"), (
            "DeepSpeed's `activation_checkpointing` section only configures `deepspeed.checkpointing`; transformers' "
            "gradient checkpointing uses torch.utils.checkpoint and ignores it"))


# ---------------------------------------------------------------------- Megatron launch scripts

# [ \t], not \s: in MULTILINE mode \s* would run over every following blank line from every line start.
_ASSIGNMENT = re.compile(r"^[ \t]*(?:export[ \t]+)?([A-Za-z_]\w*)=([^\s;#]+)", re.M)


def _megatron(source: str, path: str, locator: Locator) -> Iterator[Finding]:
    if "--recompute" not in source:
        return
    variables = {m.group(1): m.group(2).strip("\"'") for m in _ASSIGNMENT.finditer(source)}
    flags: dict[str, tuple[str, int]] = {}  # flag -> (value, offset of the flag)
    for match in re.finditer(r"(--[a-z][a-z0-9-]*)(?:[ \t]*=[ \t]*|[ \t]+(?:\\\n[ \t]*)?)([^\s\\-][^\s\\]*)?", source):
        flags[match.group(1)] = (match.group(2) or "", match.start())
    granularity = _value(flags, "--recompute-granularity", variables)
    method = _value(flags, "--recompute-method", variables)
    if granularity != "full" or method != "block" or "--recompute-num-layers" not in flags:
        return
    recomputed = _number(_value(flags, "--recompute-num-layers", variables))
    layers = _number(_value(flags, "--num-layers", variables))
    stages = _number(_value(flags, "--pipeline-model-parallel-size", variables)) or 1
    if recomputed is None or layers is None or layers % stages:
        return
    per_stage = layers // stages
    if recomputed >= per_stage:
        return
    offset = flags["--recompute-num-layers"][1]
    line = locator.line_of(offset)
    column = offset - locator.starts[line - 1] + 1
    where = f"{per_stage} layers per pipeline stage" if stages > 1 else f"{layers} layers"
    from rootrank.check import severity_of

    yield Finding(PARTIAL, severity_of(PARTIAL, DEFAULT_SEVERITY[PARTIAL]), path, line, column, line,
                  column + len("--recompute-num-layers"),
                  f"checkpointing covers {recomputed} of {where}: `--recompute-method block "
                  f"--recompute-num-layers {recomputed}` recomputes only the first {recomputed}; the others keep their "
                  "activations and set peak memory")


def _value(flags: dict[str, tuple[str, int]], flag: str, variables: dict[str, str]) -> str | None:
    if flag not in flags:
        return None
    value = flags[flag][0].strip("\"'")
    for _ in range(3):
        match = re.fullmatch(r"\$\{?([A-Za-z_]\w*)\}?", value)
        if match is None:
            break
        if match.group(1) not in variables:
            return None  # set outside the script: cannot be known
        value = variables[match.group(1)]
    try:
        return shlex.split(value)[0] if value else value
    except ValueError:
        return value


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


# ---------------------------------------------------------------------- across the files of one run

_HF_CHECKPOINTING = re.compile(r"(?:gradient|activation)_checkpointing_enable\s*\(|"
                               r"(?:gradient|activation)_checkpointing\s*=\s*True")


def _beside(script: str, config: str) -> bool:
    a, b = os.path.dirname(os.path.abspath(script)), os.path.dirname(os.path.abspath(config))
    return a == b or os.path.dirname(a) == b or os.path.dirname(b) == a


def cross_file(sources: dict[str, str]) -> list[Finding]:
    """An Accelerate config with FSDP activation checkpointing, and Python in the same run that also
    turns on transformers' gradient checkpointing: every block is checkpointed twice."""
    python = [(path, _HF_CHECKPOINTING.search(text), text) for path, text in sources.items() if path.endswith(".py")]
    enabling = [(path, match, text) for path, match, text in python if match is not None]
    if not enabling:
        return []
    findings = []
    for path, text in sources.items():
        if not path.lower().endswith((".yaml", ".yml")) or "fsdp_activation_checkpointing" not in text \
                or over_parse_cap(text, "YAML"):
            continue
        # A repository holds many scripts and configs: only a script beside the config (same folder, or
        # the folder above or below it) is taken to run with it.
        near = [e for e in enabling if _beside(e[0], path)]
        if not near:
            continue
        path_py, match, text_py = near[0]
        line_py = text_py.count("\n", 0, match.start()) + 1 if match else 1
        try:
            config = _Config(path, text, Locator(text))
        except (ValueError, yaml.YAMLError, RecursionError):
            continue
        fsdp = config.data.get("fsdp_config") if isinstance(config.data, dict) else None
        if isinstance(fsdp, dict) and fsdp.get("fsdp_activation_checkpointing") is True \
                and not any(config.data.get(name) is True for name in hf.FLAGS):
            findings.append(config.finding(DOUBLE, config.key(fsdp, "fsdp_activation_checkpointing"), (
                f"`fsdp_activation_checkpointing: true` while {path_py}:{line_py} also turns on transformers' "
                "gradient checkpointing: every block is checkpointed twice and recomputed twice in backward; "
                "keep only FSDP's")))
    return findings
