"""The Java tokenizer's char table: what it writes compactly must expand to exactly what the probe saw."""

from tokenizers import normalizers

from mobile_export.assets import ondevice
import pytest

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

HANGUL = range(0xAC00, 0xD7A4)


def _members(ranges):
    return {cp for first, last in ranges for cp in range(first, last + 1)}


def test_bert_normalizer_hangul_is_written_as_ranges_and_expands_to_the_normalizer():
    bert = normalizers.BertNormalizer(lowercase=True, strip_accents=None)
    table = ondevice._probe(bert)
    assert table["hangul"] == [[0xAC00, 0xD7A3]]  # every syllable, as one range
    assert not {cp for cp, _ in table["map"]} & set(HANGUL)
    for cp in HANGUL:  # the arithmetic the Java side applies gives what the Rust normalizer gives
        assert ondevice.hangul_decomposition(cp) == bert.normalize_str(chr(cp)), hex(cp)


def test_a_syllable_the_normalizer_changes_otherwise_stays_an_explicit_entry():
    class Skewed:
        """NFD, except that one syllable becomes another string."""

        def normalize_str(self, text):
            return "x" if text == "\uac01" else normalizers.NFD().normalize_str(text)

    table = ondevice._probe(Skewed())
    assert [0xAC01, "x"] in table["map"]
    assert _members(table["hangul"]) == set(HANGUL) - {0xAC01}


def test_a_normalizer_that_keeps_hangul_lists_none():
    table = ondevice._probe(normalizers.Lowercase())
    assert table["hangul"] == []
    assert not {cp for cp, _ in table["map"]} & set(HANGUL)


def test_grapheme_classes_are_the_rust_segmenters():
    classes = {k: _members(v) for k, v in ondevice._probe_grapheme_classes().items()}
    assert {0x0301, 0x093F, 0x200D, 0xFE0F, 0xE0041} <= classes["extend"]  # marks, spacing mark, ZWJ, VS16, tag
    assert {0x0600, 0x0D4E} <= classes["prepend"]
    assert {0x00, 0x0A, 0x0D, 0x200B, 0x2028} <= classes["control"]
    for cp in (0x61, 0x20, 0x4E2D, 0xAC00):
        assert all(cp not in members for members in classes.values()), hex(cp)


# (lead, vowel, final, open syllable, closed syllable) of both Hangul blocks, and a letter
_JAMO = {"L": "\u1100\ua960", "V": "\u1161\ud7b0", "T": "\u11a8\ud7cb", "LV": "\uac00", "LVT": "\uac01", "x": "\u0416"}
_JOINS = {
    ("L", "L"),
    ("L", "V"),
    ("L", "LV"),
    ("L", "LVT"),
    ("V", "V"),
    ("V", "T"),
    ("LV", "V"),
    ("LV", "T"),
    ("T", "T"),
    ("LVT", "T"),
}  # UAX #29 GB6-GB8, as the Java tokenizer's Jamo applies them


def test_the_rust_segmenter_joins_hangul_as_the_java_tokenizer_does():
    everything = ondevice._maps_every_code_point()
    for a, firsts in _JAMO.items():
        for b, seconds in _JAMO.items():
            for x in firsts:
                for y in seconds:
                    # joined: one cluster of >= 6 bytes, mapped char by char ("aaa"); apart: y and its mark are one
                    # cluster of under 6 bytes, mapped whole ("aa")
                    joined = everything.normalize_str(x + y + "\u0301") == "aaa"
                    assert joined == ((a, b) in _JOINS), (a, b, hex(ord(x)), hex(ord(y)))


def test_grapheme_classes_list_emoji_that_continue_a_zwj_sequence():
    pictographic = _members(ondevice._probe_grapheme_classes()["pictographic"])
    assert {0x00A9, 0x203C, 0x2122, 0x2603, 0x1F600, 0x1F44D} <= pictographic
    assert not {0x61, 0x416, 0x4E2D, 0x0301, 0x200D, 0x1F1E6} & pictographic  # letters, marks, ZWJ, a flag letter
