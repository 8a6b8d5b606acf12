"""An export's tokenizer read with the ``tokenizers`` package alone: the ids, type ids, offsets, special-token mask,
truncation and decoding that transformers' fast tokenizer gives from the same ``tokenizer.json``, without importing
transformers (or the torch it brings) into a process that only runs artifacts.

What transformers adds around the backend, and is repeated here: the named special tokens registered as special
added tokens when ``tokenizer.json`` lacks them, no padding, truncation set per call (``longest_first`` for
``truncation=True``, from the right), no clean-up of spaces when decoding (transformers 5's default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class ExportTokenizer:
    """The tokenizer an export carries (``tokenizer.json`` and the special tokens its settings name)."""

    def __init__(self, spec: str, special_tokens: Mapping[str, str]) -> None:
        """``spec``: the ``tokenizer.json`` text; ``special_tokens``: role (cls, sep, pad, unk, mask) -> token.
        Raises whatever ``tokenizers`` raises for a spec it cannot read."""
        from tokenizers import AddedToken, Tokenizer

        self._backend = Tokenizer.from_str(spec)
        self._backend.no_padding()
        self._backend.no_truncation()
        self._special = dict(special_tokens)
        have = {str(t.content) for t in self._backend.get_added_tokens_decoder().values()}
        missing = [t for t in self._special.values() if t not in have]
        if missing:  # as transformers does for named special tokens absent from the added tokens
            self._backend.add_tokens([AddedToken(t, special=True) for t in dict.fromkeys(missing)])

    def encode(
        self,
        text: str,
        pair: str | None = None,
        *,
        add_special_tokens: bool = True,
        truncation: str | None = None,
        max_length: int | None = None,
    ) -> Any:
        """``text`` (with ``pair``) as a ``tokenizers.Encoding``; ``truncation``: None, ``longest_first`` or
        ``only_second``, to ``max_length`` tokens with the special tokens counted."""
        if truncation is None:
            self._backend.no_truncation()
        else:
            if max_length is None:
                raise ValueError("truncation needs a max_length")
            self._backend.enable_truncation(max_length, stride=0, strategy=truncation, direction="right")
        try:
            return self._backend.encode(text, pair, add_special_tokens=add_special_tokens)
        finally:
            self._backend.no_truncation()

    def count(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> int:
        """How many tokens ``text`` (with ``pair``) has, untruncated."""
        return len(self.encode(text, pair, add_special_tokens=add_special_tokens).ids)

    def token(self, role: str) -> str | None:
        """The special token of ``role`` (cls, sep, pad, unk, mask), None when the export names none."""
        return self._special.get(role)

    def token_id(self, role: str) -> int | None:
        """The id of ``role``'s special token, None when the export names none."""
        token = self.token(role)
        return None if token is None else self._backend.token_to_id(token)

    @property
    def mask_token(self) -> str | None:
        return self.token("mask")

    @property
    def mask_token_id(self) -> int | None:
        return self.token_id("mask")

    @property
    def unk_token_id(self) -> int | None:
        return self.token_id("unk")

    @property
    def pad_token_id(self) -> int | None:
        return self.token_id("pad")

    def id_to_token(self, token_id: int) -> str:
        """The token of ``token_id`` as transformers' ``convert_ids_to_tokens`` gives it ("" for an id outside the
        vocabulary, where transformers gives None)."""
        return self._backend.id_to_token(int(token_id)) or ""

    def convert_tokens_to_string(self, tokens: Sequence[str]) -> str:
        """``tokens`` joined by the tokenizer's decoder (with spaces where it has none)."""
        decoder = self._backend.decoder
        return decoder.decode(list(tokens)) if decoder is not None else " ".join(tokens)

    def decode(self, ids: Sequence[int]) -> str:
        """``ids`` as text, special tokens kept, spaces not cleaned up (transformers 5's defaults)."""
        return self._backend.decode([int(i) for i in ids], skip_special_tokens=False)
