"""An export used from Python without its checkpoint: ``mobile_export.load(out_dir)`` -> typed results.

The artifact runs in its real runtime through the same ``Runner`` the parity checker uses (the .pte's
calling convention hidden inside it); the tokenizer is the export's own ``tokenizer.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import overload

import numpy as np

from .. import backends
from ..core.choices import DEFAULT_TOP_K
from ..backends import Backend
from ..core.errors import BadInputError
from ..core.signature import INPUT_NAMES
from ..core.tasks import OutputKind
from . import decoding
from .folder import ArtifactEntry, ExportFolder, open_export
from .results import Answer, Classification, Embedding, Entity, MaskFills, Result


class Predictor:
    """One artifact of an export folder loaded in its runtime, with the export's tokenizer and labels."""

    def __init__(self, folder: ExportFolder, artifact: ArtifactEntry, threads: int | None = None) -> None:
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise BadInputError(f"threads {threads!r}: pass 1 or more (or None: the runtime's default)")
        self.folder = folder
        self.artifact = artifact
        self.task = folder.task
        self.labels = folder.labels
        self.tokenizer = folder.tokenizer
        self.path = folder.artifact_path(artifact)
        self._runner = backends.load(artifact.backend).Runner(self.path, threads=threads)
        # an artifact of one fixed length (the NPU file) takes at most that many tokens: texts are cut there
        self.max_length = min(folder.max_length, getattr(self._runner, "length", folder.max_length))

    @property
    def backend(self) -> Backend:
        """The artifact's format."""
        return self.artifact.backend

    def tokens(self, text: str, context: str | None = None) -> tuple[int, int]:
        """(tokens the artifact sees, tokens ``text`` (with ``context``) has): fewer are seen where the text is
        longer than the export's max length (the context is cut first)."""
        from ..core.text import sanitize

        _check_text(text, "text")
        whole = self.tokenizer.count(sanitize(text), sanitize(context) if context is not None else None)
        return min(whole, self.max_length), whole

    def _encode(self, text: str, context: str | None = None) -> decoding.Encoded:
        from ..core.text import sanitize

        _check_text(text, "question" if context is not None else "text")
        if context is not None:
            _check_text(context, "context")
        text = sanitize(text)
        if context is not None:  # only the context is truncated: the question must fit beside a part of it
            context = sanitize(context)
            room = self.max_length - 3 - min(self.tokenizer.count(context, add_special_tokens=False), 1)
            if self.tokenizer.count(text, add_special_tokens=False) > room:
                raise BadInputError(
                    f"the question is longer than this export's max length ({self.max_length} tokens with its "
                    "context); shorten it or export with a larger --max-seq-len"
                )
        enc = self.tokenizer.encode(
            text,
            context,
            truncation="only_second" if context is not None else "longest_first",
            max_length=self.max_length,
        )
        return decoding.Encoded(
            text=context if context is not None else text,
            ids=np.asarray(enc.ids, dtype=np.int64),
            offsets=[(int(a), int(b)) for a, b in enc.offsets],
            special=np.asarray(enc.special_tokens_mask, dtype=bool),
            sequence_ids=list(enc.sequence_ids),
            types=np.asarray(enc.type_ids, dtype=np.int64),
        )

    def _outputs(self, text: str, context: str | None = None) -> tuple[decoding.Encoded, list[np.ndarray]]:
        enc = self._encode(text, context)
        ids = enc.ids[None, :]
        feeds = {INPUT_NAMES[0]: ids, INPUT_NAMES[1]: np.ones_like(ids), INPUT_NAMES[2]: enc.types[None, :]}
        return enc, self._runner.run(feeds)

    def _require(self, *kinds: str) -> None:
        if self.task.name not in kinds:
            raise BadInputError(f"this export is for {self.task.name}, not {' or '.join(kinds)}")

    def classify(self, text: str) -> Classification:
        """text-classification: the label and every label's score."""
        self._require("text-classification")
        _, (logits, *_) = self._outputs(text)
        return decoding.classify(logits[0], self.labels, self.folder.score_function)

    def entities(self, text: str) -> list[Entity]:
        """token-classification: entities with their character spans in ``text``."""
        self._require("token-classification")
        enc, (logits, *_) = self._outputs(text)
        return decoding.entities(
            logits[0],
            enc,
            self.labels,
            self.tokenizer.id_to_token,
            self.tokenizer.convert_tokens_to_string,
            self.tokenizer.unk_token_id,
        )

    def answer(self, question: str, context: str) -> Answer:
        """question-answering: the answer to ``question`` in ``context`` (truncated to the max length)."""
        self._require("question-answering")
        _check_text(context, "context")
        enc, (start, end, *_) = self._outputs(question, context)
        return decoding.answer(start[0], end[0], enc)

    def fill_mask(self, text: str, top_k: int = DEFAULT_TOP_K) -> list[MaskFills]:
        """fill-mask: the top ``top_k`` tokens at every ``[MASK]`` of ``text`` (a top-k head: at its first
        8 masks, at most its K)."""
        self._require("fill-mask")
        if not isinstance(top_k, int) or top_k < 1:
            raise BadInputError(f"top_k {top_k!r}: pass 1 or more")
        _check_text(text, "text")
        mask, token = self.tokenizer.mask_token_id, self.tokenizer.mask_token
        if mask is None or token is None or token not in text:
            raise BadInputError(f"fill-mask needs a {token or '[MASK]'} in the text: {text[:60]!r}")
        enc, outputs = self._outputs(text)
        if self.task.kind is OutputKind.TOP_K:  # the head already chose: read its slots
            return decoding.top_k_slots(outputs[0][0], outputs[1][0], outputs[2][0], top_k, self._token)
        return decoding.fill_mask(outputs[0][0], enc, int(mask), top_k, self._token)

    @property
    def prompts(self) -> dict[str, str]:
        """The prompts a sentence-transformers folder names (``query``: ``"query: "``, ...); empty otherwise."""
        return dict((self.folder.manifest.head or {}).get("prompts") or {})

    def encode(self, text: str, prompt: str | None = None) -> Embedding:
        """feature-extraction: the model's output vectors for ``text`` (its sentence embedding with ``--pooling``);
        ``prompt``: the name of one of ``prompts``, whose text is put before ``text`` as the model was trained."""
        self._require("feature-extraction")
        if prompt is not None:
            prompts = self.prompts
            if prompt not in prompts:
                known = ", ".join(prompts) or "none"
                raise BadInputError(f"prompt {prompt!r} is not one this export names; it names: {known}")
            _check_text(text, "text")
            text = prompts[prompt] + text
        _, (hidden, *_) = self._outputs(text)
        return Embedding(np.asarray(hidden[0], dtype=np.float32))

    def predict(self, text: str, context: str | None = None, top_k: int = DEFAULT_TOP_K) -> Result:
        """What the export's task gives for ``text`` (``context`` for question answering)."""
        kind = self.task.kind
        if self.task.name == "question-answering":
            if context is None:
                raise BadInputError("question-answering needs a context: predict(question, context) or answer(...)")
            return self.answer(text, context)
        if context is not None:
            raise BadInputError(f"a context is for question-answering exports; this one is {self.task.name}")
        if kind is OutputKind.SEQUENCE_LOGITS:
            return self.classify(text)
        if self.task.name == "fill-mask":
            return self.fill_mask(text, top_k)
        if self.task.name == "token-classification":
            return self.entities(text)
        return self.encode(text)

    @overload
    def __call__(self, text: str, context: str | None = None) -> Result: ...

    @overload
    def __call__(self, text: list[str], context: list[str] | None = None) -> list[Result]: ...

    def __call__(self, text, context=None):
        """:meth:`predict`, called as a transformers pipeline is: one text gives one result, a list of texts
        (with, for question answering, a list of contexts of the same length) a list of results."""
        if isinstance(text, str):
            return self.predict(text, context)
        if not isinstance(text, (list, tuple)):
            raise BadInputError(f"pass a text (str) or a list of texts, not {type(text).__name__}")
        texts = list(text)
        if not all(isinstance(t, str) for t in texts):
            raise BadInputError("pass a text or a list of texts (str)")
        contexts = (
            [None] * len(texts)
            if context is None
            else [context] * len(texts)
            if isinstance(context, str)
            else list(context)
        )
        if len(contexts) != len(texts):
            raise BadInputError(f"{len(texts)} questions but {len(contexts)} contexts; pass one context per question")
        return [self.predict(t, c) for t, c in zip(texts, contexts)]

    def _token(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id])


def _check_text(text: object, what: str) -> None:
    """BadInputError unless ``text`` is a string with something in it."""
    if not isinstance(text, str):
        raise BadInputError(f"the {what} must be a str, not {type(text).__name__}")
    if not text.strip():
        raise BadInputError(f"the {what} is empty: pass a non-empty {what}")


def load(out_dir: str | os.PathLike, backend: Backend | str | None = None, threads: int | None = None) -> Predictor:
    """Load one artifact of an export folder (``backend``: a format's name, ``Backend``; default the first listed), or
    one .pte / .onnx file alone (it carries its tokenizer, labels and identity)."""
    folder = open_export(Path(out_dir))
    chosen = Backend(backend) if isinstance(backend, str) else backend
    return Predictor(folder, folder.artifact(chosen), threads=threads)
