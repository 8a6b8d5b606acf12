"""Built-in parity text: real sentences in English and Chinese, and examples at chosen lengths."""

from __future__ import annotations

from ..core.thresholds import MIN_BUCKET_EXAMPLES

ENGLISH = [
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael.",
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife.",
    "Happy families are all alike; every unhappy family is unhappy in its own way.",
    "The battery lasts two days and the screen is bright enough to read in the sun.",
    "Shipping took three weeks and the box arrived crushed.",
    "I would not recommend this hotel: the room smelled of smoke and the staff were rude.",
    "Absolutely loved it! Best purchase I've made all year.",
    "The quick brown fox jumps over the lazy dog.",
    "Can you tell me how to get to the train station from here?",
    "Ms. O'Neill paid $12.50 for 3 coffees at 8:45 a.m. on 2024-03-01.",
    "Café, naïve, résumé, déjà vu: accents appear in borrowed words.",
    "``Quoted'' text and  extra   spaces\tshould normalise the same way.",
    "Whereof one cannot speak, thereof one must be silent.",
    "The mitochondria is the powerhouse of the cell.",
    "Please turn off your phone before the film starts.",
]

CHINESE = [
    "这家餐厅的菜真好吃，服务也很周到。",
    "质量太差了，用了两天就坏了，不推荐购买。",
    "物流很快，包装完好，书的印刷也很清晰。",
    "客服态度恶劣，退货流程非常麻烦。",
    "性价比很高，下次还会再来。",
    "房间干净整洁，就是隔音效果一般。",
    "手机屏幕很清楚，电池也耐用，总体满意。",
    "这本书内容空洞，浪费时间。",
    "今天天气不错，我们去公园散步吧。",
    "价格有点贵，但是味道确实不错。",
]

MIXED = [
    "iPhone 的电池续航比 Android 手机好吗？",
    "I ordered 两份 noodles but got only one 😞",
]


def builtin_texts() -> list[str]:
    """The built-in mix, without the empty text and the long examples."""
    return ENGLISH + CHINESE + MIXED


def long_text(tokenizer, n_tokens: int, start: int = 0) -> str:
    """A real-sentence text of ``n_tokens`` ids (fewer only when no prefix hits it exactly), built
    from the built-in sentences starting at the ``start``-th."""
    pool = builtin_texts()

    def count(t: str) -> int:
        return len(tokenizer(t)["input_ids"])

    parts: list[str] = []
    i = 0
    while True:
        parts.append(pool[(start + i) % len(pool)])
        i += 1
        text = " ".join(parts)
        if count(text) >= n_tokens or i > 50 * len(pool):
            break
    lo, hi = 0, len(text)  # the longest prefix of at most n_tokens ids (usually exactly n_tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= n_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip()


LONG_TEXTS = MIN_BUCKET_EXAMPLES  # texts at 128 tokens and at the max length: their buckets are gated


def long_texts(tokenizer, max_len: int) -> list[str]:
    """``LONG_TEXTS`` different texts at 128 tokens and as many at ``max_len`` (different sentence mixes)."""
    pool = len(builtin_texts())
    return [
        long_text(tokenizer, target, start=k * pool // LONG_TEXTS)
        for target in sorted({min(128, max_len), max_len})
        for k in range(LONG_TEXTS)
    ]


def parity_texts(tokenizer, max_len: int) -> list[str]:
    """Texts for the export-time parity check: empty ([CLS] [SEP]), short, 128 tokens, and max length."""
    return [""] + builtin_texts() + long_texts(tokenizer, max_len)
