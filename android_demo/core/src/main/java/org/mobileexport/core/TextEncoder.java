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
    private final long[] prefixIds;
    private final long[] suffixIds;
    private final String kind;
    private final int maskId; // -1 when the tokenizer has no mask token
    private final String maskToken;
    private final String[] pieces; // by id, as transformers' decode([id]) writes the token alone

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
        } else {
            throw new JSONException("tokenizer model " + type + " is not supported on device");
        }
        pieces = pieces(spec, type.equals("Unigram"));
        JSONObject mask = settings.optJSONObject("special_tokens") == null ? null
                : settings.getJSONObject("special_tokens").optJSONObject("mask");
        maskId = mask == null ? -1 : mask.getInt("id");
        maskToken = mask == null ? null : mask.getString("token");
        // TemplateProcessing "single": special tokens around the sequence $A.
        JSONObject post = spec.getJSONObject("post_processor");
        JSONArray single = post.getJSONArray("single");
        JSONObject specials = post.getJSONObject("special_tokens");
        List<Long> before = new ArrayList<>();
        List<Long> after = new ArrayList<>();
        boolean seenSequence = false;
        for (int i = 0; i < single.length(); i++) {
            JSONObject piece = single.getJSONObject(i);
            if (piece.has("Sequence")) {
                seenSequence = true;
                continue;
            }
            JSONArray ids = specials.getJSONObject(piece.getJSONObject("SpecialToken").getString("id")).getJSONArray("ids");
            for (int k = 0; k < ids.length(); k++) {
                (seenSequence ? after : before).add(ids.getLong(k));
            }
        }
        prefixIds = toArray(before);
        suffixIds = toArray(after);
        if (maxLength < prefixIds.length + suffixIds.length) {
            throw new JSONException("max_length " + maxLength + " leaves no room for the special tokens");
        }
    }

    /**
     * Each id's token as transformers decodes it alone: WordPiece's token as it is (its decoder only joins "##"
     * pieces to a previous one), SentencePiece's piece without its word-boundary marks (the Metaspace decoder drops
     * them from a first token); added tokens by their content, through the same rule.
     */
    private static String[] pieces(JSONObject spec, boolean metaspace) throws JSONException {
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
        String[] out = new String[byId.size()];
        for (int i = 0; i < out.length; i++) {
            String piece = byId.get(i);
            out[i] = piece == null ? "" : metaspace ? piece.replace("\u2581", "") : piece;
        }
        return out;
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

    private static long[] toArray(List<Long> list) {
        long[] a = new long[list.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = list.get(i);
        }
        return a;
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
        List<Integer> ids = new ArrayList<>();
        for (AddedTokens.Segment seg : added.split(Text.sanitize(text))) {
            if (seg.isToken()) {
                ids.add(seg.id);
            } else {
                model.tokenize(seg.text, seg.start == 0, ids);
            }
        }
        return ids;
    }

    /** Model inputs for {@code text}: special tokens added, truncated to the exported max length. */
    public Encoding encode(String text) {
        List<Integer> ids = tokenize(text);
        int room = maxLength - prefixIds.length - suffixIds.length;
        int keep = Math.min(room, ids.size());
        long[] out = new long[prefixIds.length + keep + suffixIds.length];
        System.arraycopy(prefixIds, 0, out, 0, prefixIds.length);
        for (int i = 0; i < keep; i++) {
            out[prefixIds.length + i] = ids.get(i);
        }
        System.arraycopy(suffixIds, 0, out, prefixIds.length + keep, suffixIds.length);
        return new Encoding(out, new long[out.length]);
    }
}
