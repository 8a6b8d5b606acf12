package org.mobileexport.core;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The on-device tokenizer: text in, model inputs out, giving the ids that transformers gives for
 * {@code tokenizer(text, truncation=True, max_length=N)} on the exported checkpoint.
 * Loads {@code tokenizer_settings.json}, {@code tokenizer.json} and {@code char_table.json} as
 * written by {@code mobile-export tokenizer} (or {@code export}, into {@code tokenizer/}).
 */
public final class TextEncoder {
    public static final String SETTINGS = "tokenizer_settings.json";

    private final AddedTokens added;
    private final SegmentTokenizer model;
    private final int maxLength;
    private final List<Part> single; // the post-processor's templates: special tokens around $A (and $B)
    private final List<Part> pair; // null when the tokenizer has no pair template
    private final String kind;
    private final int maskId; // -1 when the tokenizer has no mask token
    private final String maskToken;
    private final String[] pieces; // by id, as transformers' decode([id]) writes the token alone
    private final String[] raw; // by id, the token as the vocabulary writes it (its byte-level characters)
    private final boolean trimOffsets; // RoBERTa's post-processor: spans without the tokens' own spaces
    private final boolean prefixSpace; // ... keeping a first token's one space, which add_prefix_space added

    private TextEncoder(JSONObject settings, JSONObject spec, JSONObject charTable) throws JSONException {
        kind = settings.getString("kind");
        maxLength = settings.getInt("max_length");
        CharTable table = new CharTable(charTable);
        added = new AddedTokens(spec.optJSONArray("added_tokens"));
        String type = spec.getJSONObject("model").getString("type");
        if (type.equals("WordPiece")) {
            model = new WordPiece(spec.getJSONObject("model"), table);
        } else if (type.equals("Unigram")) {
            model = new Unigram(spec, table);
        } else if (type.equals("BPE")) {
            model = new ByteLevelBpe(spec, table);
        } else {
            throw new JSONException("tokenizer model " + type + " is not supported on device");
        }
        pieces = pieces(spec, type.equals("Unigram"), type.equals("BPE"));
        raw = tokens(spec, type.equals("Unigram"));
        JSONObject mask = settings.optJSONObject("special_tokens") == null ? null
                : settings.getJSONObject("special_tokens").optJSONObject("mask");
        maskId = mask == null ? -1 : mask.getInt("id");
        maskToken = mask == null ? null : mask.getString("token");
        JSONObject post = spec.getJSONObject("post_processor");
        if (post.getString("type").equals("RobertaProcessing")) { // <s> A </s>, <s> A </s></s> B </s>; type ids 0
            long cls = post.getJSONArray("cls").getLong(1);
            long sep = post.getJSONArray("sep").getLong(1);
            single = List.of(special(cls), new Part(null, false, 0), special(sep));
            pair = List.of(special(cls), new Part(null, false, 0), special(sep), special(sep), new Part(null, true, 0),
                    special(sep));
            trimOffsets = post.optBoolean("trim_offsets", true);
            prefixSpace = post.optBoolean("add_prefix_space", false);
        } else {
            JSONObject specials = post.getJSONObject("special_tokens");
            single = template(post.getJSONArray("single"), specials);
            pair = post.has("pair") ? template(post.getJSONArray("pair"), specials) : null;
            trimOffsets = false;
            prefixSpace = false;
        }
        if (maxLength < specialCount(single)) {
            throw new JSONException("max_length " + maxLength + " leaves no room for the special tokens");
        }
    }

    /** One element of a TemplateProcessing template: special token ids, or sequence A / B, with its type id. */
    private static final class Part {
        final long[] ids; // null for a sequence
        final boolean second; // sequence B
        final long type;

        Part(long[] ids, boolean second, long type) {
            this.ids = ids;
            this.second = second;
            this.type = type;
        }
    }

    private static List<Part> template(JSONArray parts, JSONObject specials) throws JSONException {
        List<Part> out = new ArrayList<>();
        for (int i = 0; i < parts.length(); i++) {
            JSONObject piece = parts.getJSONObject(i);
            if (piece.has("Sequence")) {
                JSONObject seq = piece.getJSONObject("Sequence");
                out.add(new Part(null, seq.getString("id").equals("B"), seq.optLong("type_id", 0)));
            } else {
                JSONObject special = piece.getJSONObject("SpecialToken");
                JSONArray ids = specials.getJSONObject(special.getString("id")).getJSONArray("ids");
                long[] values = new long[ids.length()];
                for (int k = 0; k < values.length; k++) {
                    values[k] = ids.getLong(k);
                }
                out.add(new Part(values, false, special.optLong("type_id", 0)));
            }
        }
        return out;
    }

    private static Part special(long id) {
        return new Part(new long[] {id}, false, 0);
    }

    private static int specialCount(List<Part> template) {
        int n = 0;
        for (Part p : template) {
            n += p.ids == null ? 0 : p.ids.length;
        }
        return n;
    }

    /**
     * Each id's token as transformers decodes it alone: WordPiece's token as it is (its decoder only joins "##"
     * pieces to a previous one), SentencePiece's piece without its word-boundary marks (the Metaspace decoder drops
     * them from a first token); added tokens by their content, through the same rule.
     */
    private static String[] pieces(JSONObject spec, boolean metaspace, boolean byteLevel) throws JSONException {
        String[] tokens = tokens(spec, metaspace);
        String[] out = new String[tokens.length];
        for (int i = 0; i < out.length; i++) {
            String piece = tokens[i];
            out[i] = piece == null ? "" : metaspace ? piece.replace("\u2581", "") : byteLevel
                    ? ByteLevelBpe.decode(piece) : piece;
        }
        return out;
    }

    /** Each id's token as the vocabulary (or the added tokens) writes it; null for an id neither has. */
    private static String[] tokens(JSONObject spec, boolean metaspace) throws JSONException {
        JSONObject m = spec.getJSONObject("model");
        List<String> byId = new ArrayList<>();
        if (metaspace) {
            JSONArray vocab = m.getJSONArray("vocab");
            for (int i = 0; i < vocab.length(); i++) {
                byId.add(vocab.getJSONArray(i).getString(0));
            }
        } else {
            JSONObject vocab = m.getJSONObject("vocab");
            for (java.util.Iterator<String> it = vocab.keys(); it.hasNext(); ) {
                String token = it.next();
                put(byId, vocab.getInt(token), token);
            }
        }
        JSONArray added = spec.optJSONArray("added_tokens");
        for (int i = 0; added != null && i < added.length(); i++) {
            put(byId, added.getJSONObject(i).getInt("id"), added.getJSONObject(i).getString("content"));
        }
        return byId.toArray(new String[0]);
    }

    private static void put(List<String> byId, int id, String token) throws JSONException {
        if (id < 0 || id > 10_000_000) {
            throw new JSONException("token id " + id + " out of range");
        }
        while (byId.size() <= id) {
            byId.add(null);
        }
        byId.set(id, token);
    }

    /** Loads the tokenizer assets from {@code source} ({@code dir} is their folder inside it, "" for the top). */
    public static TextEncoder load(AssetSource source, String dir) throws IOException {
        String base = dir.isEmpty() || dir.endsWith("/") ? dir : dir + "/";
        JSONObject settings = source.json(base + SETTINGS);
        try {
            JSONObject files = settings.getJSONObject("files");
            return new TextEncoder(settings, source.json(base + files.getString("tokenizer")),
                    source.json(base + files.getString("char_table")));
        } catch (JSONException e) {
            throw new IOException("tokenizer assets in '" + dir + "' are not usable: " + e.getMessage()
                    + " (re-export them with `mobile-export tokenizer`)", e);
        }
    }

    public String kind() {
        return kind;
    }

    public int maxLength() {
        return maxLength;
    }

    /** The mask token's id, or -1 when the tokenizer has none. */
    public int maskId() {
        return maskId;
    }

    /** The mask token as text contains it ("[MASK]"), or null when the tokenizer has none. */
    public String maskToken() {
        return maskToken;
    }

    /** Token {@code id} as transformers' {@code tokenizer.decode([id])} gives it. */
    public String tokenOf(int id) {
        if (id < 0 || id >= pieces.length) {
            throw new IllegalArgumentException("token id " + id + " is outside the vocabulary (" + pieces.length + ")");
        }
        return pieces[id];
    }

    /** Token ids of {@code text} without special tokens and without truncation. */
    public List<Integer> tokenize(String text) {
        Tokens tokens = tokens(text);
        List<Integer> ids = new ArrayList<>(tokens.size());
        for (int i = 0; i < tokens.size(); i++) {
            ids.add(tokens.id(i));
        }
        return ids;
    }

    /** The tokens of {@code text} (made valid Unicode first) with their spans in it, no special tokens. */
    Tokens tokens(String text) {
        Tokens out = new Tokens();
        String valid = Text.sanitize(text);
        for (AddedTokens.Segment seg : added.split(valid)) {
            if (seg.isToken()) {
                out.add(seg.id, seg.start, seg.end);
            } else {
                model.tokenize(AlignedText.of(seg.text, seg.start), seg.start == 0, out);
            }
        }
        return trimOffsets ? trimmed(out, valid) : out;
    }

    /**
     * tokenizers' ByteLevel process_offsets: a token's leading and trailing spaces ("\u0120", or whitespace) leave its
     * span, except the one space add_prefix_space put before the first token (or one starting at 0).
     */
    private Tokens trimmed(Tokens in, String text) {
        Tokens out = new Tokens();
        for (int i = 0; i < in.size(); i++) {
            String token = in.id(i) < raw.length && raw[in.id(i)] != null ? raw[in.id(i)] : "";
            int[] cps = token.codePoints().toArray();
            int lead = 0;
            while (lead < cps.length && isSpace(cps[lead])) {
                lead++;
            }
            int trail = 0;
            while (trail < cps.length && isSpace(cps[cps.length - 1 - trail])) {
                trail++;
            }
            // in code points, as tokenizers counts offsets here (a span is UTF-16 indices)
            int start = text.codePointCount(0, in.start(i));
            int end = start + text.codePointCount(in.start(i), in.end(i));
            if (lead > 0) {
                boolean first = i == 0 || start == 0;
                if (!(first && prefixSpace && lead == 1)) {
                    start = Math.min(start + lead, end);
                }
            }
            if (trail > 0 && end >= trail) {
                end = Math.max(end - trail, start);
            }
            int from = text.offsetByCodePoints(0, start);
            out.add(in.id(i), from, text.offsetByCodePoints(from, end - start));
        }
        return out;
    }

    /** The byte-level space, or a character Rust's char::is_whitespace takes (Unicode White_Space). */
    private static boolean isSpace(int cp) {
        return cp == 0x120 || (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680
                || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F
                || cp == 0x3000;
    }

    /** Model inputs for {@code text}: special tokens added, truncated to the exported max length. */
    public Encoding encode(String text) {
        return encodeSpans(text).input;
    }

    /** {@link #encode} with each token's span in {@code text} (made valid Unicode). */
    Spans encodeSpans(String text) {
        Tokens tokens = tokens(text);
        return assemble(single, tokens, Math.min(maxLength - specialCount(single), tokens.size()), null, 0);
    }

    /**
     * Model inputs for a question and its context ({@code tokenizer(question, context, truncation="only_second")}):
     * the context cut to the max length, the question never.
     */
    Spans encodePair(String question, String context) {
        if (pair == null) {
            throw new IllegalStateException("this tokenizer has no template for a pair of texts");
        }
        Tokens q = tokens(question);
        Tokens c = tokens(context);
        int room = maxLength - specialCount(pair) - Math.min(1, c.size());
        if (q.size() > room) {
            throw new IllegalArgumentException("the question is longer than this export's max length (" + maxLength
                    + " tokens with its context); shorten it or export with a larger --max-seq-len");
        }
        return assemble(pair, q, q.size(), c, Math.min(c.size(), maxLength - specialCount(pair) - q.size()));
    }

    /** Model inputs with, per token, the text it came from (0 first, 1 second, -1 special) and its span there. */
    static final class Spans {
        final Encoding input;
        final int[] sequence;
        final int[] starts;
        final int[] ends;

        Spans(Encoding input, int[] sequence, int[] starts, int[] ends) {
            this.input = input;
            this.sequence = sequence;
            this.starts = starts;
            this.ends = ends;
        }
    }

    private static Spans assemble(List<Part> template, Tokens first, int keepFirst, Tokens second, int keepSecond) {
        int n = specialCount(template) + keepFirst + (second == null ? 0 : keepSecond);
        long[] ids = new long[n];
        long[] types = new long[n];
        int[] sequence = new int[n];
        int[] starts = new int[n];
        int[] ends = new int[n];
        int at = 0;
        for (Part p : template) {
            if (p.ids != null) {
                for (long id : p.ids) {
                    ids[at] = id;
                    types[at] = p.type;
                    sequence[at++] = -1;
                }
                continue;
            }
            Tokens t = p.second ? second : first;
            int keep = p.second ? keepSecond : keepFirst;
            for (int i = 0; t != null && i < keep; i++) {
                ids[at] = t.id(i);
                types[at] = p.type;
                sequence[at] = p.second ? 1 : 0;
                starts[at] = t.start(i);
                ends[at++] = t.end(i);
            }
        }
        return new Spans(new Encoding(ids, types), sequence, starts, ends);
    }
}
