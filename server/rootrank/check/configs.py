"""Checks over training configs and launch scripts: Trainer arguments in JSON/YAML, Accelerate and
DeepSpeed configs, and Megatron launch scripts (`*.sh`).

Findings use the same failure-entry ids as the Python rules. Positions come from the parser: YAML marks
(merge keys and flow mappings included) and, for JSON, an index built with the decoder's own scanners; a
key whose position is unknown gets no fix. Every fix is proven before it is offered: applied alone, the
config still parses and the finding is gone. A config that cannot be parsed gives one `syntax-error`
finding, as a Python file does.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import os
import re
import shlex
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from rootrank.check import hf
from rootrank.check.bounds import Cancelled, alias_expansion, over_parse_cap, skipped, stop_if
from rootrank.check.source import Locator
from rootrank.model import Applicability, Edit, Finding, Fix, Severity
from rootrank.stack import facts, layers

USE_REENTRANT = "checkpoint.use-reentrant-explicit"
DOUBLE = "checkpoint.fsdp-double-checkpoint"
USE_CACHE = "checkpoint.hf-use-cache"
DDP = "checkpoint.reentrant-ddp"
PARTIAL = "checkpoint.partial-coverage"
DEEPSPEED = "checkpoint.deepspeed-config"
RECOMPUTE = "checkpoint.recompute-mismatch"
OFFLOAD = "checkpoint.fsdp-offload-config"
OFFLOAD_TOPIC = "accelerate.activation-checkpointing-offload"
RNG_STATE_TOPIC = "accelerate.fsdp2-no-rng-state"
SYNTAX_ERROR = "syntax-error"
DEFAULT_SEVERITY = {USE_REENTRANT: Severity.WARNING, DOUBLE: Severity.WARNING, USE_CACHE: Severity.WARNING,
                    DDP: Severity.ERROR, PARTIAL: Severity.WARNING, DEEPSPEED: Severity.INFO,
                    RECOMPUTE: Severity.WARNING, OFFLOAD: Severity.ERROR}
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Key:
    """Where a key sits, as the parser reported it: (line, column) of the key and the end of its value,
    1-based characters. `known` is False when the parser gave no position: such a key gets no fix."""

    line: int
    column: int
    end_line: int
    end_column: int
    value: Any
    block: bool = True  # YAML block style (a new line can be inserted after it)
    value_line: int = 0  # where the value starts (0: unknown)
    value_column: int = 0
    known: bool = True
    merged: bool = False  # YAML: the key comes through a merge key (`<<: *base`) from another mapping

    @property
    def editable(self) -> bool:
        """Whether an edit at this key changes only the mapping it was found in."""
        return self.known and not self.merged

    def replace_value(self, text: str) -> Edit | None:
        if not self.value_line or not self.editable:
            return None
        return Edit(self.value_line, self.value_column, self.end_line, self.end_column, text)


class RefusedError(ValueError):
    """A config that is not parsed further: its aliases expand beyond the budget (check/bounds.py)."""


class _RecordingLoader(_Loader):
    """PyYAML's safe loader that remembers which object it built from which node, so positions from the
    parser can be tied to the mappings the checks look at (merge keys included)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.made: dict[int, Any] = {}

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        data = super().construct_object(node, deep)
        self.made[id(node)] = data
        return data


class _Config:
    """A parsed config: the data and, from the parser, where each key of each mapping is written."""

    def __init__(self, path: str, source: str, locator: Locator, cancelled: Cancelled | None = None) -> None:
        self.path = path
        self.source = source
        self.locator = locator
        self.json = path.lower().endswith(".json")
        self.data: Any = None
        self.keys: dict[tuple[int, str], Key] = {}
        self.versions: dict[str, str] = {}  # installed library versions; missing: unknown
        if self.json:
            json.loads(source)  # the decoder's own errors for a file that is not JSON
            self.data = _JsonIndex(source, locator, self.keys).data
        else:
            loader = _RecordingLoader(source)
            try:
                node = loader.get_single_node()
                # Aliases are shared in the node graph but copied out by merge keys while constructing,
                # and walked once per use by anything that follows the data: measure first, in linear time.
                refused = alias_expansion(node, cancelled=cancelled) if node is not None else None
                if refused is not None:
                    raise RefusedError(refused)
                stop_if(cancelled)
                self.data = loader.construct_document(node) if node is not None else None
            finally:
                loader.dispose()
            if node is not None:
                self._index(node, loader.made)

    def _index(self, root: yaml.Node, made: dict[int, Any]) -> None:
        # Iterative, each node once: aliases share nodes, and a deep or self-referencing document must
        # neither recurse without bound nor be walked more than once.
        seen: set[int] = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, yaml.SequenceNode):
                stack.extend(node.value)
                continue
            data = made.get(id(node))
            if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
                continue
            # After construction, node.value holds the merged pairs (flattened) followed by the mapping's
            # own: later pairs win, as in the constructed dict.
            for key_node, value_node in node.value:
                key = made.get(id(key_node), key_node.value)
                if not isinstance(key, str) or key not in data:
                    continue
                inside = (node.start_mark.index <= key_node.start_mark.index <= node.end_mark.index)
                self.keys[(id(data), key)] = Key(
                    key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                    value_node.end_mark.line + 1, value_node.end_mark.column + 1, data[key],
                    not node.flow_style, value_node.start_mark.line + 1, value_node.start_mark.column + 1,
                    merged=not inside)
                stack.append(value_node)

    def key(self, mapping: dict[str, Any], name: str) -> Key:
        found = self.keys.get((id(mapping), name))
        if found is not None:
            return found
        return Key(1, 1, 1, 1, mapping.get(name), known=False)

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


class _JsonIndex:
    """JSON data built together with each key's position (the `json` module keeps none): strings through
    the decoder's own `scanstring`, other values through `raw_decode`, so the data is exactly `json.loads`'s.
    Duplicate keys: the last one wins, in the data and in the positions."""

    _WHITESPACE = re.compile(r"[ \t\n\r]*")
    MAX_DEPTH = 64  # deeper objects are data only: no check looks that far down

    def __init__(self, source: str, locator: Locator, keys: dict[tuple[int, str], Key]) -> None:
        self.source = source
        self.locator = locator
        self.keys = keys
        self.decoder = json.JSONDecoder()
        self.data, _ = self._value(self._skip(0), 0)

    def _skip(self, at: int) -> int:
        match = self._WHITESPACE.match(self.source, at)
        return match.end() if match else at

    def _position(self, offset: int) -> tuple[int, int]:
        line = self.locator.line_of(offset)
        return line, offset - self.locator.starts[line - 1] + 1

    def _value(self, at: int, depth: int) -> tuple[Any, int]:
        char = self.source[at:at + 1]
        if depth < self.MAX_DEPTH and char == "{":
            return self._object(at, depth)
        if depth < self.MAX_DEPTH and char == "[":
            return self._array(at, depth)
        value, end = self.decoder.raw_decode(self.source, at)
        return value, end

    def _object(self, at: int, depth: int) -> tuple[dict[str, Any], int]:
        data: dict[str, Any] = {}
        at = self._skip(at + 1)
        if self.source.startswith("}", at):
            return data, at + 1
        while True:
            key_at = at
            name, at = json.decoder.scanstring(self.source, at + 1)  # type: ignore[attr-defined]
            at = self._skip(self._skip(at) + 1)  # past the colon
            value_at = at
            value, at = self._value(at, depth + 1)
            data[name] = value
            (line, column), (value_line, value_column) = self._position(key_at), self._position(value_at)
            end_line, end_column = self._position(at)
            self.keys[(id(data), name)] = Key(line, column, end_line, end_column, value, True, value_line,
                                             value_column)
            at = self._skip(at)
            if self.source.startswith("}", at):
                return data, at + 1
            at = self._skip(at + 1)  # past the comma

    def _array(self, at: int, depth: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        at = self._skip(at + 1)
        if self.source.startswith("]", at):
            return items, at + 1
        while True:
            value, at = self._value(at, depth + 1)
            items.append(value)
            at = self._skip(at)
            if self.source.startswith("]", at):
                return items, at + 1
            at = self._skip(at + 1)



def check_config(source: str, path: str, locator: Locator,
                 versions: Mapping[str, str] | None = None, validate: bool = True,
                 cancelled: Cancelled | None = None) -> list[Finding]:
    """Findings for one config; with `validate`, each fix is kept only if it is proven (see _proven)."""
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
    if validate:
        findings = _proven(findings, source, path, locator, versions)
    return findings


def parses(source: str, path: str) -> bool:
    """Whether a config still reads as JSON or YAML (a launch script always does)."""
    if path.lower().endswith(".sh"):
        return True
    try:
        _Config(path, source, Locator(source))
    except (ValueError, yaml.YAMLError, RecursionError):
        return False
    return True


MAX_PROVEN_FIXES = 64  # each is one more parse and check of the file; past this many, no fixes are offered


def _proven(findings: list[Finding], source: str, path: str, locator: Locator,
            versions: Mapping[str, str] | None) -> list[Finding]:
    """Keep only the fixes that, applied alone, leave a config that parses and no longer has their
    finding: what `--fix`, the quick fix and fix-all apply is then known to be right, not hoped to be."""
    fixes = sum(len(f.fixes) for f in findings)
    if not fixes:
        return findings
    before = Counter(f.rule for f in findings)
    out = []
    for finding in findings:
        kept = tuple(fix for fix in finding.fixes if fixes <= MAX_PROVEN_FIXES
                     and _removes(fix, finding.rule, before[finding.rule], source, path, locator, versions))
        out.append(finding if kept == finding.fixes else dataclasses.replace(finding, fixes=kept))
    return out


def _removes(fix: Fix, rule: str, count: int, source: str, path: str, locator: Locator,
             versions: Mapping[str, str] | None) -> bool:
    spans = sorted((locator.offset(e.line, e.column), locator.offset(e.end_line, e.end_column), e.text)
                   for e in fix.edits)
    if any(a[1] > b[0] for a, b in itertools.pairwise(spans)) or any(start > end for start, end, _ in spans):
        return False
    pieces, position = [], 0
    for start, end, text in spans:
        pieces += [source[position:start], text]
        position = end
    fixed = "".join([*pieces, source[position:]])
    after = check_config(fixed, path, Locator(fixed), versions, validate=False)
    if any(f.rule == SYNTAX_ERROR for f in after):
        return False
    return sum(1 for f in after if f.rule == rule) < count


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
    """`name: {use_reentrant: value}` beside `key`, in the same mapping; None where that place is unknown."""
    if not key.editable or not key.value_line:
        return None
    flag = str(value).lower()
    if config.json:
        text = f', "{name}": {{"use_reentrant": {flag}}}'
        return Edit(key.end_line, key.end_column, key.end_line, key.end_column, text)
    if not key.block:  # a flow mapping (`{gradient_checkpointing: true, ...}`): right after the value
        return Edit(key.end_line, key.end_column, key.end_line, key.end_column, f", {name}: {{use_reentrant: {flag}}}")
    # A block mapping: a new line after the value's last line, at the key's own column, which is also
    # right for a key in a list item (`- gradient_checkpointing: true`).
    last = key.end_line if key.end_column > 1 else key.end_line - 1
    end = len(config.locator.line_text(last)) + 1
    newline = "\r\n" if "\r\n" in config.source else "\n"
    text = f"{newline}{' ' * (key.column - 1)}{name}: {{use_reentrant: {flag}}}"
    return Edit(last, end, last, end, text)


def _accelerate(config: _Config, data: dict[str, Any]) -> Iterator[Finding]:
    fsdp = data.get("fsdp_config")
    if isinstance(fsdp, dict) and fsdp.get("fsdp_activation_checkpointing_offload") is True:
        yield from _offload(config, fsdp)
    if not (isinstance(fsdp, dict) and fsdp.get("fsdp_activation_checkpointing") is True):
        return
    if fsdp.get("fsdp_version") == 2:
        yield from _fsdp2_rng_state(config, fsdp)
    if any(data.get(name) is True for name in hf.FLAGS):
        yield config.finding(DOUBLE, config.key(fsdp, "fsdp_activation_checkpointing"), (
            "`fsdp_activation_checkpointing: true` together with `gradient_checkpointing: true`: every block is "
            "checkpointed twice (FSDP's wrapper and transformers'); keep only FSDP's"))


def _offload(config: _Config, fsdp: dict[str, Any]) -> Iterator[Finding]:
    """`fsdp_activation_checkpointing_offload` is an option of FSDP2's activation checkpointing: the plugin
    (accelerate.activation-checkpointing-offload) raises without `fsdp_activation_checkpointing: true` and on
    FSDP1, which is also what a config without `fsdp_version` gets (`accelerate launch --fsdp_version` defaults
    to 1). An Accelerate without the option is not judged here."""
    answer = facts.answer(OFFLOAD_TOPIC, config.versions)
    if answer.is_(False):
        return
    version = fsdp.get("fsdp_version", 1)
    missing = []
    if fsdp.get("fsdp_activation_checkpointing") is not True:
        missing.append(("activation_checkpointing=True", "without `fsdp_activation_checkpointing: true`"))
    if str(version) != "2":
        said = f"with `fsdp_version: {version}`" if "fsdp_version" in fsdp else \
            "without `fsdp_version` (`accelerate launch` then uses FSDP1)"
        missing.append(("fsdp_version=2", said))
    if not missing:
        return
    # The plugin checks activation checkpointing first, so that is the error a config missing both raises.
    raised = f"`ValueError: `activation_checkpointing_offload=True` requires `{missing[0][0]}`.`"
    note = "" if answer.known else f" (applies to {facts.topic(OFFLOAD_TOPIC).versions_where(True)}; {answer.assumed})"
    found = config.finding(OFFLOAD, config.key(fsdp, "fsdp_activation_checkpointing_offload"), (
        f"`fsdp_activation_checkpointing_offload: true` {' and '.join(w for _, w in missing)}: Accelerate's FSDP "
        f"plugin raises {raised} in `Accelerator()` on every rank; offload is an option of FSDP2's "
        "activation checkpointing (`fsdp_version: 2`, `fsdp_activation_checkpointing: true`)") + note)
    yield dataclasses.replace(found, severity=Severity.ERROR if answer.known else Severity.WARNING,
                              assumes=(answer.assumed,))


def _fsdp2_rng_state(config: _Config, fsdp: dict[str, Any]) -> Iterator[Finding]:
    """Accelerate's FSDP2 activation checkpointing recomputes without the forward's RNG state, which matters
    only for a model that trains with dropout. The strength of the finding follows what is known of dropout:
    a non-zero `*dropout*` setting in the file (`lora_dropout: 0.05`), or a wrapped layer class whose model
    config defaults to one (`GPT2Block`: `resid_pdrop` 0.1), makes it a warning; settings that are all zero,
    or layers whose models train without dropout and no adapter of unknown dropout, silence it (the recompute
    is exact); otherwise (an `accelerate config` file naming no model) it is a note."""
    answer = facts.answer(RNG_STATE_TOPIC, config.versions)
    if answer.is_(False):
        return
    dropouts = _dropout_settings(config.data)
    model = _model_dropout(fsdp, {name.rsplit(".", 1)[-1] for name, _ in dropouts})
    active = [f"`{name}: {value:g}`" for name, value in dropouts if value > 0][:3]
    model_warns = bool(model)
    exact = bool(dropouts) or (model is not None and _adapter_dropout_known(config.data))
    if not active and not model_warns and exact:
        return
    note = "" if answer.known else \
        f" (applies to {facts.topic(RNG_STATE_TOPIC).versions_where(True)}; {answer.assumed})"
    if active:
        where = f"this file sets {', '.join(active)}, so the"
    elif model:
        where = f"{model}, so the"
    elif model is not None:
        # trl/trainer/model_config.py:115-117 (TRL main at the precision mirror): `lora_dropout` 0.05;
        # PEFT's LoraConfig defaults to 0.0 (peft 0.21.2, installed)
        where = ("the wrapped layers' models train without dropout, but this file trains an adapter without "
                 "setting `lora_dropout` (TRL's ModelConfig defaults it to 0.05); if it is not 0, the")
    else:
        where = "this file names no dropout; if the model (or its LoRA adapters) trains with dropout, the"
    found = config.finding(RECOMPUTE, config.key(fsdp, "fsdp_activation_checkpointing"), (
        "`fsdp_activation_checkpointing: true` with `fsdp_version: 2`: Accelerate wraps each layer in "
        f"`checkpoint_wrapper(layer, preserve_rng_state=False)`; {where} recompute draws other dropout masks "
        "than the forward and the gradients are silently inconsistent; set the dropout to 0, or checkpoint the "
        "layers yourself with `preserve_rng_state=True`") + note)
    severity = Severity.WARNING if active or model_warns else Severity.INFO
    yield dataclasses.replace(found, severity=severity, assumes=(answer.assumed,))


def _model_dropout(fsdp: dict[str, Any], set_in_file: set[str]) -> str | None:
    """What the wrapped layers' models do by default (`fsdp_transformer_layer_cls_to_wrap`, read against
    transformers' config defaults): a phrase naming the non-zero dropout settings the file does not set,
    "" when there are none, or None when a layer is not named or not known."""
    names = layers.layer_names(fsdp.get("fsdp_transformer_layer_cls_to_wrap"))
    known = [layers.layer_defaults(name) for name in names]
    if not names or any(row is None for row in known):
        return None
    rows = [row for row in known if row is not None]
    nonzero = sorted({setting for row in rows for setting in row.nonzero_dropout
                      if setting.rsplit(".", 1)[-1] not in set_in_file})
    if not nonzero:
        return ""
    where = ", ".join(f"`{row.layer}` ({'/'.join(row.model_types[:2])})" for row in rows[:2])
    settings = ", ".join(f"`{setting}`" for setting in nonzero[:3])
    return (f"the wrapped layers {where} come from a model whose config defaults {settings} to non-zero "
            f"(transformers {rows[0].transformers}) and this file does not set them to 0")


# axolotl fills an unset `lora_dropout` with 0.0 for any adapter (src/axolotl/utils/schemas/peft.py:80, 235-237
# at axolotl-ai-cloud/axolotl@067b021); its recipes are told apart by its own top-level keys.
_AXOLOTL_KEYS = frozenset({"base_model", "micro_batch_size", "sequence_len", "datasets"})
_ADAPTER_KEYS = ("adapter", "lora_r", "peft_config", "use_peft", "lora_target_modules")


def _adapter_dropout_known(data: Any) -> bool:
    """True when the file trains no adapter, or one whose dropout is known to default to 0 (axolotl's)."""
    if not isinstance(data, dict) or not any(data.get(key) for key in _ADAPTER_KEYS):
        return True
    return len(_AXOLOTL_KEYS & data.keys()) >= 2


_DROPOUT_KEY = re.compile(r"dropout|pdrop", re.IGNORECASE)


def _dropout_settings(data: Any, limit: int = 10_000) -> list[tuple[str, float]]:
    """Every numeric setting whose key names a dropout (`lora_dropout`, `attention_dropout`, `resid_pdrop`),
    anywhere in the file, in document order; at most `limit` nodes are visited."""
    found: list[tuple[str, float]] = []
    stack: list[Any] = [data]
    visited = 0
    while stack and visited < limit:
        node = stack.pop()
        visited += 1
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str) and _DROPOUT_KEY.search(key) and isinstance(value, (int, float)) \
                        and not isinstance(value, bool):
                    found.append((key, float(value)))
            stack.extend(reversed([v for v in node.values() if isinstance(v, (dict, list))]))
        elif isinstance(node, list):
            stack.extend(reversed([v for v in node if isinstance(v, (dict, list))]))
    return found


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


# A class of the project's own that declares the flag: `gradient_checkpointing: bool = ...` in its body.
_FLAG_FIELD = re.compile(r"^[ \t]+(?:gradient|activation)_checkpointing[ \t]*:", re.M)
_TRAINER_BASES = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "GRPOConfig", "DPOConfig",
                            "ORPOConfig", "KTOConfig", "RewardConfig", "PPOConfig"})
_PLAIN_BASES = frozenset({"object", "BaseModel"})
# Config findings that rest on the Trainer reading the mapping (its default kwargs decide the mode).
READER_DEPENDENT = frozenset({USE_REENTRANT, DDP})


def own_config_reader(sources: Mapping[str, str]) -> str:
    """`path:line Class` of an argument class of the project's own (a dataclass or pydantic model that is not
    a TrainingArguments) declaring `gradient_checkpointing`, or "". Such a project reads its YAML/JSON configs
    into its own class (open-instruct's `FlatArguments`, axolotl's config schema), and its code, not the
    Trainer's defaults, decides how checkpointing is enabled: the Python checks see that code."""
    classes: dict[str, tuple[tuple[str, ...], bool, str]] = {}  # name -> (bases, declares the flag, where)
    for path, text in sources.items():
        if not path.endswith(".py") or not _FLAG_FIELD.search(text):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = tuple(b.attr if isinstance(b, ast.Attribute) else b.id if isinstance(b, ast.Name) else "?"
                              for b in node.bases)
                declares = any(isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                               and s.target.id in hf.FLAGS for s in node.body)
                classes.setdefault(node.name, (bases, declares, f"{path}:{node.lineno} {node.name}"))

    def own(name: str, depth: int = 0) -> bool:
        """Not a TrainingArguments, as far as the bases can be followed (an unknown base: not known to be own)."""
        if name in _TRAINER_BASES or depth > 10:
            return False
        if name not in classes:
            return name in _PLAIN_BASES
        return all(own(base, depth + 1) for base in classes[name][0])

    return next((where for name, (_, declares, where) in sorted(classes.items()) if declares and own(name)), "")


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
