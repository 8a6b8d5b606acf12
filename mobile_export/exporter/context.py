"""One export under way (``ExportRun``): what every stage of the pipeline reads, set once when it starts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from .. import backends
from ..assets.labels import labels
from ..backends.base import Plan
from ..core.choices import Quant, int4_group_size_for
from ..backends import Backend
from ..core.fsutil import make_staging, prepare_destination
from ..core.progress import Progress
from ..core.signature import resolve_max_len
from ..core.tasks import get_task
from ..core.thresholds import Thresholds
from ..measure.budgets import Budget, resolve_budget
from ..core.heads import parse_head
from ..model.families import longest_input
from ..model.heads import with_head
from ..model.loading import LoadedModel, load_checkpoint
from ..model.reference import Example, tokenize
from ..model.sentence import SentenceModules, read_sentence_modules
from ..parity.source import ParitySource
from ..parity.data import ParityData, read_parity_file
from ..parity.diagnosis import SAMPLE_LENGTH, SAMPLE_TEXTS
from .calibration import Calibration, calibration_for
from .options import ExportOptions


@dataclass
class ExportRun:
    """One export: the checkpoint with its head, the options, the staging folder inside ``out`` that every file
    is written to before it is published, where progress goes, and what was computed from them once (the max
    length, the user's parity data, the budget, the diagnosis sample)."""

    options: ExportOptions
    out: Path
    progress: Progress
    budget: Budget | None
    loaded: LoadedModel
    data: ParityData | None
    max_len: int
    staging: Path
    made: list[Path]  # the folders of ``out`` this export made (removed again if it fails and leaves them empty)
    calibrated: dict[int, tuple] = field(default_factory=dict)  # ``calibration`` by length

    @classmethod
    def start(cls, source: str | os.PathLike, out: Path, options: ExportOptions, progress: Progress) -> ExportRun:
        """Refuse what cannot work before loading a 50 MB checkpoint (capabilities, task, budget, destination),
        then load the checkpoint with its head and the parity data, and make the staging folder."""
        for b in options.backends:
            backends.check_supported(b, options.quant)
        if options.task:
            get_task(options.task)
        budget = resolve_budget(options.budget) if options.budget else None
        prepare_destination(out, options.overwrite)
        with progress.step("loading checkpoint"):
            loaded = load_checkpoint(source, options.task)
            sentence = _sentence_modules(loaded, options)
            pooling = sentence.pooling if sentence else options.pooling
            normalize = options.normalize or bool(sentence and sentence.normalize)
            found = sentence.projections if sentence else ()
            loaded = with_head(loaded, parse_head(loaded.task.name, options.head, pooling, normalize, found))
        if sentence:
            progress.say(f"read {sentence.describe()}")
            task = replace(loaded.task, head={**loaded.task.head, **sentence.record()})
            loaded = replace(loaded, task=task)
        for b in options.backends:
            backends.check_family(b, loaded.family.name)
        data = read_parity_file(options.data, labels(loaded.config)) if options.data else None
        for note in loaded.notes:
            progress.say(f"note: {note}")
        trained = sentence.max_seq_length if sentence else None  # the length a sentence encoder was trained at
        max_len = resolve_max_len(longest_input(loaded.config), options.max_seq_len or trained)
        made = [p for p in (out, *out.parents) if not p.exists()]
        return cls(options, out, progress, budget, loaded, data, max_len, make_staging(out), made)

    @property
    def thresholds(self) -> Thresholds:
        """The parity gate of this export's artifacts."""
        return self.options.thresholds_for(self.loaded.task.kind.value)

    @property
    def int4_group_size(self) -> int | None:
        """Input values per 4-bit weight scale (int4 exports only)."""
        if self.options.quant is not Quant.INT4:
            return None
        return int4_group_size_for(int(self.loaded.config.hidden_size), self.options.int4_group_size)

    def parity_source(self) -> ParitySource:
        """The texts every artifact is checked on: the user's data, or the built-in text."""
        return ParitySource.build(self.loaded.tokenizer, self.data, self.max_len)

    @cached_property
    def calibration_choice(self) -> Calibration:
        """The texts a statically quantized format calibrates on and their source (``calibration.calibration_for``);
        the export says why when it is not the default or fits the vocabulary badly."""
        source = self.parity_source()
        parity = (*source.before, *source.after)
        chosen = calibration_for(self.options.calibration, parity, self.data, self.loaded.tokenizer)
        if chosen.note:
            self.progress.say(f"note: {chosen.note}")
        return chosen

    def calibration(self, length: int) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        """(ids, type ids) of the calibration texts, each cut to ``length`` tokens as the tokenizer truncates;
        tokenized once per length (``plan`` is asked again by the conversion check and the repairs)."""
        if length not in self.calibrated:
            examples = tokenize(self.loaded.tokenizer, self.calibration_choice.texts, length)
            self.calibrated[length] = tuple(
                (tuple(ex.feeds["input_ids"][0].tolist()), tuple(ex.feeds["token_type_ids"][0].tolist()))
                for ex in examples
            )
        return self.calibrated[length]

    @cached_property
    def sample(self) -> list[Example]:
        """The parity texts the diagnosis and the repairs look at: the first non-empty ones, at most
        ``SAMPLE_LENGTH`` tokens each (one padded batch of them must stay small beside a 30,000-word head)."""
        texts = []
        for text, _ in self.parity_source().items():
            if text.strip():
                texts.append(text)
                if len(texts) == SAMPLE_TEXTS:
                    break
        return tokenize(self.loaded.tokenizer, texts, min(self.max_len, SAMPLE_LENGTH))

    def plan(self, backend: Backend, keep: tuple[str, ...] = (), widen: tuple[str, ...] = ()) -> Plan:
        """What ``backend`` lowers: this export's precision and inputs, and the format's own options; ``keep``:
        int8 Linears left fp32 (a repair's mixed precision); ``widen``: activations given wider ranges (the ranges
        repair of a statically quantized format)."""
        info = backends.get_info(backend)
        fixed = info.fixed_length if self.options.max_seq_len is None else None
        max_len = min(self.max_len, fixed) if fixed else self.max_len
        return Plan(
            quant=self.options.quant,
            max_len=max_len,
            vocab_size=int(self.loaded.config.vocab_size),
            dynamic_batch=info.dynamic_batch,
            options=self.options.options_for(backend),
            group_size=self.int4_group_size,
            keep=keep,
            signature=self.loaded.family.signature,
            int8_table=self.options.quant is Quant.INT8 and self.options.quantize_embeddings,
            calibration=self.calibration(max_len) if info.calibrated else (),
            calibration_source=self.calibration_choice.source if info.calibrated else "",
            calibrate=self.calibration if info.calibrated else None,
            widen=widen,
        )


def _sentence_modules(loaded: LoadedModel, options: ExportOptions) -> SentenceModules | None:
    """A sentence-transformers folder's pooling, normalization, length and prompts, when the export is its sentence
    embedding and the user chose no head (flags win over the folder's modules)."""
    if options.head or options.pooling or loaded.task.name != "feature-extraction":
        return None
    return read_sentence_modules(loaded.folder)
