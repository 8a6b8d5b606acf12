package org.mobileexport.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A small on-device semantic search for a sentence-embedding model ({@code --task feature-extraction --pooling}):
 * a few sentences encoded once, then ranked by cosine similarity to each query's embedding.
 */
public final class SemanticSearch {
    /** The demo app's sentences: reviews and everyday lines in several languages. */
    public static final List<String> SENTENCES = List.of(
            "这家餐厅的菜真好吃，服务也很周到。",
            "质量太差了，用了两天就坏了。",
            "The battery lasts two full days on a single charge.",
            "The delivery was late and the box was damaged.",
            "Das Hotel lag direkt am Bahnhof und war sehr sauber.",
            "La película fue aburrida y demasiado larga.",
            "この本はとても面白かったです。",
            "Where is the nearest train station?");

    /** One sentence and its cosine similarity to the query. */
    public static final class Hit {
        public final String sentence;
        public final double cosine;

        Hit(String sentence, double cosine) {
            this.sentence = sentence;
            this.cosine = cosine;
        }
    }

    private final TextModel model;
    private final List<String> sentences;
    private final List<float[]> vectors = new ArrayList<>();

    /** Embeds {@code sentences} with {@code model} (once, here). */
    public SemanticSearch(TextModel model, List<String> sentences) throws Exception {
        this.model = model;
        this.sentences = List.copyOf(sentences);
        for (String s : this.sentences) {
            vectors.add(model.encode(s));
        }
    }

    /** Every sentence, most similar to {@code query} first. */
    public List<Hit> rank(String query) throws Exception {
        float[] q = model.encode(query);
        List<Hit> hits = new ArrayList<>();
        for (int i = 0; i < sentences.size(); i++) {
            hits.add(new Hit(sentences.get(i), SentenceEmbedding.cosine(q, vectors.get(i))));
        }
        hits.sort((a, b) -> Double.compare(b.cosine, a.cosine));
        return Collections.unmodifiableList(hits);
    }
}
