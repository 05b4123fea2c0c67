"""``judgecards import openai-graders``: OpenAI Evals graders as judge cards and eval configs.

Accepted files (JSON or YAML): one grader object, a list of graders, an eval's create body with
``testing_criteria``, or a fine-tuning ``{"grader": ...}``. OpenAI reports each testing
criterion on its own, so each grader becomes its own tiered-eval config, ``<name>.yaml``, over
one shared ``items.jsonl``: one object per sample with an ``id``, the eval item's fields at the
top level (``{{item.answer}}`` reads ``answer``) and the sampled output as ``model_output``
(``{{sample.output_text}}``).

- ``label_model``: a card whose reply is one of ``labels`` (the verdict is the judge's label);
  the tier passes ``passing_labels``.
- ``score_model``: a card whose ``result`` lies in ``range``; verdict ``pass`` from
  ``pass_threshold`` in code.
- ``string_check`` against a fixed reference: a regex check (``eq`` whole text, ``ne`` its
  negation, ``like``/``ilike`` contains, case-sensitive or not). Against a per-item reference
  judgecards has no check, so it is listed as not translated.
- ``text_similarity`` with ``rouge_1``…``rouge_5``/``rouge_l``: a metric check with
  ``min: pass_threshold``; ``fuzzy_match``, ``bleu``, ``gleu``, ``meteor`` and ``cosine`` are
  metrics judgecards lacks.
- ``multi``: each sub-grader is imported; ``calculate_output`` is a formula the tiers cannot
  express, so it is listed as not translated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgecards.errors import InputError
from judgecards.importers._output import (
    CARDS_DIR,
    CardDraft,
    ImportPlan,
    ImportResult,
    input_name,
    jinja_body,
    read_source,
    slug,
    unique,
    write_plan,
)
from judgecards.safe_yaml import YamlDocument

__all__ = ["import_openai_graders", "plan_openai_graders"]

ITEMS_FILE = "items.jsonl"
OUTPUT_FIELD = "model_output"
_ITEM = re.compile(r"item\.([A-Za-z_][A-Za-z0-9_]*)")
_ONLY_PLACEHOLDER = re.compile(r"\s*\{\{\s*([^{}]*?)\s*\}\}\s*")
_ROUGE = {
    "rouge_1": "rouge1",
    "rouge_2": "rouge2",
    "rouge_3": "rouge3",
    "rouge_4": "rouge4",
    "rouge_5": "rouge5",
    "rouge_l": "rougeL",
}
_SYSTEM_ROLES = ("system", "developer")


def import_openai_graders(path: Path, output: Path) -> ImportResult:
    """Translate the graders in ``path`` and write them into the new directory ``output``.

    Raises:
        InputError: the file cannot be read or is not a grader config (file, line, field).
        OutputError: ``output`` exists and is not empty, or cannot be written.
    """
    return write_plan(plan_openai_graders(path), output)


def _field_name(expression: str) -> str | None:
    """The items-file field a placeholder reads, or None when it reads something else."""
    if expression == "sample.output_text":
        return OUTPUT_FIELD
    found = _ITEM.fullmatch(expression)
    return found.group(1) if found else None


class _Untranslatable(Exception):
    """A grader part with no judgecards equivalent: the grader is left out, and listed."""

    def __init__(self, loc: tuple[str | int, ...], what: str) -> None:
        super().__init__(what)
        self.loc = loc
        self.what = what


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.document: YamlDocument = read_source(path, "grader config")
        self.plan = ImportPlan(source=path, kind="OpenAI Evals graders")
        self.names: set[str] = set()
        self.fields: set[str] = set()

    def line(self, loc: tuple[str | int, ...]) -> int | None:
        return self.document.line_of([str(part) for part in loc])

    def fail(self, message: str, loc: tuple[str | int, ...]) -> InputError:
        return InputError(
            message, file=self.path, line=self.line(loc), field=".".join(map(str, loc)) or None
        )

    def graders(self) -> list[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
        """Each grader of the file with its location."""
        data = self.document.data
        found: list[tuple[tuple[str | int, ...], Any]]
        if isinstance(data, Mapping) and "testing_criteria" in data:
            criteria = data["testing_criteria"]
            if not isinstance(criteria, list) or not criteria:
                raise self.fail(
                    "'testing_criteria' must be a non-empty list", ("testing_criteria",)
                )
            found = [(("testing_criteria", i), g) for i, g in enumerate(criteria)]
        elif isinstance(data, Mapping) and "grader" in data and "type" not in data:
            found = [(("grader",), data["grader"])]
        elif isinstance(data, Mapping):
            found = [((), data)]
        elif isinstance(data, list) and data:
            found = [((i,), g) for i, g in enumerate(data)]
        else:
            raise self.fail(
                "expected a grader (with 'type'), a list of graders, or 'testing_criteria'", ()
            )
        for loc, grader in found:
            if not isinstance(grader, Mapping) or not isinstance(grader.get("type"), str):
                raise self.fail("a grader must be a mapping with a 'type'", loc)
        return found

    # ------------------------------------------------------------------ one grader

    def grader(self, loc: tuple[str | int, ...], grader: Mapping[str, Any], name: str) -> None:
        kind = grader["type"]
        where = f"grader {name!r} ({kind})"
        handlers = {
            "label_model": self.label_model,
            "score_model": self.score_model,
            "string_check": self.string_check,
            "text_similarity": self.text_similarity,
            "multi": self.multi,
        }
        handler = handlers.get(kind)
        if handler is None:
            self.plan.gap(
                where,
                self.line((*loc, "type")),
                f"type {kind!r}",
                "judgecards has no equivalent (python graders run code and are never imported)",
            )
            return
        try:
            handler(loc, grader, name, where)
        except _Untranslatable as skipped:
            self.plan.gap(where, self.line(skipped.loc), skipped.what, "the grader is not imported")

    def _text(self, value: Any, loc: tuple[str | int, ...]) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, Mapping) and isinstance(text := value.get("text"), str):
            return text
        if isinstance(value, list):
            return "\n".join(self._text(part, (*loc, i)) for i, part in enumerate(value))
        raise _Untranslatable(loc, "message content that is not text (an image, audio)")

    def _messages(
        self, loc: tuple[str | int, ...], grader: Mapping[str, Any], where: str
    ) -> tuple[str | None, str, dict[str, str]]:
        """The card's system text, its body and its inputs (card input → items field)."""
        messages = grader.get("input")
        if not isinstance(messages, list) or not messages:
            raise self.fail("a model grader needs 'input', a list of messages", (*loc, "input"))
        inputs: dict[str, str] = {}

        def resolve(expression: str) -> str | None:
            field = _field_name(expression)
            if field is None:
                return None
            name = field if field == OUTPUT_FIELD else input_name(field, prefix="item")
            inputs[name] = field
            return name

        system: list[str] = []
        body: list[str] = []
        turns = sum(
            1 for m in messages if isinstance(m, Mapping) and m.get("role") not in _SYSTEM_ROLES
        )
        for index, message in enumerate(messages):
            mloc = (*loc, "input", index)
            if not isinstance(message, Mapping) or "content" not in message:
                raise self.fail("a message needs 'role' and 'content'", mloc)
            role = str(message.get("role", "user"))
            text = self._text(message["content"], (*mloc, "content"))
            converted, unresolved = jinja_body(text, resolve)
            for placeholder in unresolved:
                self.plan.gap(
                    where,
                    self.line((*mloc, "content")),
                    f"placeholder {placeholder}",
                    "only {{item.<field>}} and {{sample.output_text}} are mapped; kept as literal text",
                )
            if role in _SYSTEM_ROLES and "{{" not in text and not body:
                system.append(text)  # a card's system text is sent as written, never rendered
            elif turns > 1 or role != "user":
                body.append(f"[{role}]\n{converted}")
            else:
                body.append(converted)
        if turns > 1:
            self.plan.gap(
                where,
                self.line((*loc, "input")),
                "a conversation of several turns",
                "sent as one user message with [role] headers",
                left_out=False,
            )
        return ("\n\n".join(system) or None), "\n\n".join(body), inputs

    def _defaults(
        self, loc: tuple[str | int, ...], grader: Mapping[str, Any], where: str
    ) -> dict[str, Any]:
        params = grader.get("sampling_params") or {}
        defaults: dict[str, Any] = {}
        if not isinstance(params, Mapping):
            return defaults
        for key, value in params.items():
            if key == "temperature" and isinstance(value, (int, float)):
                defaults["temperature"] = float(value)
            elif (
                key in ("max_completions_tokens", "max_tokens")
                and isinstance(value, int)
                and value > 0
            ):
                defaults["max_tokens"] = value
            else:
                self.plan.gap(
                    where,
                    self.line((*loc, "sampling_params", key)),
                    f"sampling_params.{key}",
                    "judgecards cards set only temperature and max_tokens; not sent",
                    left_out=False,
                )
        return defaults

    def _model(self, grader: Mapping[str, Any]) -> str:
        model = grader.get("model")
        return f"openai:{model}" if isinstance(model, str) and model else "openai:gpt-4o"

    def _judge_config(self, name: str, judge: dict[str, Any]) -> None:
        self.plan.configs[f"{name}.yaml"] = {
            "items": ITEMS_FILE,
            "tiers": [{"name": "judge", "judge": judge}],
        }

    def label_model(
        self, loc: tuple[str | int, ...], grader: Mapping[str, Any], name: str, where: str
    ) -> None:
        labels = grader.get("labels")
        passing = grader.get("passing_labels")
        if (
            not isinstance(labels, list)
            or not labels
            or not all(isinstance(x, str) for x in labels)
        ):
            raise self.fail("'labels' must be a non-empty list of strings", (*loc, "labels"))
        if not isinstance(passing, list) or not passing or any(x not in labels for x in passing):
            raise self.fail("'passing_labels' must list some of 'labels'", (*loc, "passing_labels"))
        system, body, inputs = self._messages(loc, grader, where)
        choices = ", ".join(labels)
        self.plan.cards.append(
            CardDraft(
                name=name,
                description=f"Imported OpenAI label_model grader {grader.get('name', name)!r}: one label of {choices}.",
                inputs={
                    key: {"description": f"The item field {field!r}."}
                    for key, field in inputs.items()
                },
                body=f"{body}\n\nAnswer with exactly one label: {choices}. Reply with one JSON object "
                "matching this JSON Schema:\n{{ output_schema }}\n",
                schema={
                    "type": "object",
                    "properties": {
                        "reasoning": {"type": "string", "description": "Why this label."},
                        "label": {"type": "string", "enum": list(labels)},
                    },
                    "required": ["label"],
                },
                verdict={"field": "label"},
                defaults=self._defaults(loc, grader, where),
                system=system,
            )
        )
        self.fields.update(inputs.values())
        self._judge_config(
            name,
            {
                "card": name,
                "model": self._model(grader),
                "cards_dir": CARDS_DIR,
                "inputs": inputs,
                "pass_verdicts": list(passing),
            },
        )

    def score_model(
        self, loc: tuple[str | int, ...], grader: Mapping[str, Any], name: str, where: str
    ) -> None:
        low, high = 0.0, 1.0
        bounds = grader.get("range", [0, 1])
        if (
            not isinstance(bounds, list)
            or len(bounds) != 2
            or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
            or bounds[0] >= bounds[1]
        ):
            raise self.fail("'range' must be [low, high] with low < high", (*loc, "range"))
        low, high = float(bounds[0]), float(bounds[1])
        threshold = grader.get("pass_threshold")
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, (int, float))
        ):
            raise self.fail("'pass_threshold' must be a number", (*loc, "pass_threshold"))
        system, body, inputs = self._messages(loc, grader, where)
        verdict = None
        judge: dict[str, Any] = {
            "card": name,
            "model": self._model(grader),
            "cards_dir": CARDS_DIR,
            "inputs": inputs,
        }
        if threshold is not None:
            verdict = {
                "rules": [{"when": {"result": {"min": float(threshold)}}, "then": "pass"}],
                "otherwise": "fail",
            }
            judge["pass_verdicts"] = ["pass"]
        else:
            judge["min_scores"] = {"result": low}
            self.plan.gap(
                where,
                self.line(loc),
                "no pass_threshold",
                f"every valid score passes (min_scores result: {low:g}); the scores are stored",
                left_out=False,
            )
        self.plan.cards.append(
            CardDraft(
                name=name,
                description=f"Imported OpenAI score_model grader {grader.get('name', name)!r}: a score from {low:g} to {high:g}.",
                inputs={
                    key: {"description": f"The item field {field!r}."}
                    for key, field in inputs.items()
                },
                body=f"{body}\n\nGive your score as 'result', a number from {low:g} to {high:g}. Reply with one "
                "JSON object matching this JSON Schema:\n{{ output_schema }}\n",
                schema={
                    "type": "object",
                    "properties": {
                        "steps": {"type": "string", "description": "Your reasoning."},
                        "result": {"type": "number", "minimum": low, "maximum": high},
                    },
                    "required": ["result"],
                },
                scores=["result"],
                verdict=verdict,
                defaults=self._defaults(loc, grader, where),
                system=system,
            )
        )
        self.fields.update(inputs.values())
        self._judge_config(name, judge)

    def _template_field(self, value: Any) -> str | None:
        found = _ONLY_PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
        return _field_name(found.group(1)) if found else None

    def string_check(
        self, loc: tuple[str | int, ...], grader: Mapping[str, Any], name: str, where: str
    ) -> None:
        operation = grader.get("operation")
        if operation not in ("eq", "ne", "like", "ilike"):
            raise self.fail("'operation' must be eq, ne, like or ilike", (*loc, "operation"))
        field = self._template_field(grader.get("input"))
        reference = grader.get("reference")
        if field is None:
            self.plan.gap(
                where,
                self.line((*loc, "input")),
                f"input {grader.get('input')!r}",
                "only one {{item.<field>}} or {{sample.output_text}} placeholder can be checked",
            )
            return
        if not isinstance(reference, str) or "{{" in reference:
            self.plan.gap(
                where,
                self.line((*loc, "reference")),
                f"reference {reference!r}",
                "judgecards checks compare a field with a fixed text, not with another item field",
            )
            return
        escaped = re.escape(reference)
        pattern = {
            "eq": rf"\A{escaped}\Z",
            "ne": rf"\A{escaped}\Z",
            "like": escaped,
            "ilike": f"(?i){escaped}",
        }[operation]
        check: dict[str, Any] = {
            "type": "regex",
            "name": name,
            "field": field,
            ("forbid" if operation == "ne" else "match"): pattern,
        }
        self.fields.add(field)
        self.plan.configs[f"{name}.yaml"] = {
            "items": ITEMS_FILE,
            "tiers": [{"name": name, "checks": [check]}],
        }

    def text_similarity(
        self, loc: tuple[str | int, ...], grader: Mapping[str, Any], name: str, where: str
    ) -> None:
        metric = grader.get("evaluation_metric")
        threshold = grader.get("pass_threshold")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise self.fail("'pass_threshold' must be a number", (*loc, "pass_threshold"))
        if metric not in _ROUGE:
            self.plan.gap(
                where,
                self.line((*loc, "evaluation_metric")),
                f"evaluation_metric {metric!r}",
                "judgecards has ROUGE-N and ROUGE-L only",
            )
            return
        prediction = self._template_field(grader.get("input"))
        reference = self._template_field(grader.get("reference"))
        if prediction is None or reference is None:
            self.plan.gap(
                where,
                self.line(loc),
                "input/reference",
                "each must be one {{item.<field>}} or {{sample.output_text}} placeholder",
            )
            return
        check = {
            "type": "metric",
            "name": name,
            "metric": _ROUGE[metric],
            "prediction": prediction,
            "reference": reference,
            "min": float(threshold),
        }
        self.fields.update((prediction, reference))
        self.plan.configs[f"{name}.yaml"] = {
            "items": ITEMS_FILE,
            "tiers": [{"name": name, "checks": [check]}],
        }

    def multi(
        self, loc: tuple[str | int, ...], grader: Mapping[str, Any], name: str, where: str
    ) -> None:
        graders = grader.get("graders")
        if not isinstance(graders, Mapping) or not graders:
            raise self.fail("'graders' must map names to graders", (*loc, "graders"))
        for key, sub in graders.items():
            sub_loc = (*loc, "graders", key)
            if not isinstance(sub, Mapping) or not isinstance(sub.get("type"), str):
                raise self.fail("a grader must be a mapping with a 'type'", sub_loc)
            self.grader(sub_loc, sub, unique(slug(f"{name}-{key}", prefix="grader"), self.names))
        self.plan.gap(
            where,
            self.line((*loc, "calculate_output")),
            f"calculate_output {grader.get('calculate_output')!r}",
            "tiers cannot combine graders with a formula; each sub-grader is imported on its own",
        )


def plan_openai_graders(path: Path) -> ImportPlan:
    """The cards and configs for the graders in ``path``, built in memory (nothing written).

    Raises:
        InputError: the file cannot be read or is not a grader config (file, line, field).
    """
    reader = _Reader(path)
    for index, (loc, grader) in enumerate(reader.graders()):
        raw_name = (
            grader.get("name") if isinstance(grader.get("name"), str) else f"grader-{index + 1}"
        )
        reader.grader(loc, grader, unique(slug(str(raw_name), prefix="grader"), reader.names))
    fields = sorted(reader.fields)
    reader.plan.notes.append(
        f"Write `{ITEMS_FILE}` beside the configs: one JSON object per sample with a unique `id`"
        + (f" and the fields {', '.join(f'`{f}`' for f in fields)}" if fields else "")
        + f" (`{OUTPUT_FIELD}` is OpenAI's `sample.output_text`; `item.<field>` is `<field>`)."
    )
    reader.plan.notes.append(
        "Each grader is its own config, as OpenAI reports each testing criterion on its own. "
        "Imported prompts are sent as written: unlike the built-in cards they do not wrap "
        "inputs in tags."
    )
    return reader.plan
