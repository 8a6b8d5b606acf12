package org.mobileexport.core;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the demo screen offers for the model it opened, by the task the file was exported for: classify a text,
 * answer a question from a context, fill the masks of a text, or search a few sentences with a sentence embedding;
 * and each run's result as the screen shows it (the median latency of a few runs after a warm-up one).
 */
public final class TaskActions {
    /** The fills shown per mask. */
    public static final int FILLS = 5;

    private final Map<TextModel, SemanticSearch> searches = new HashMap<>(); // sentences encoded once per model

    /** The screen's button for {@code task}, or null when the screen has nothing to offer for it. */
    public static String action(String task, List<String> outputs) {
        switch (task) {
            case "text-classification":
                return "Classify";
            case "question-answering":
                return "Answer";
            case "fill-mask":
                return "Fill mask";
            case "feature-extraction":
                return outputs.contains(SentenceEmbedding.OUTPUT) ? "Search" : null;
            default:
                return null;
        }
    }

    /** Whether {@code task} reads a second text (question answering's context). */
    public static boolean needsContext(String task) {
        return task.equals("question-answering");
    }

    /** A first text to try: a review, a question, a text with the model's mask token, a search query. */
    public static String example(String task, String maskToken) {
        switch (task) {
            case "question-answering":
                return "Where was the hotel?";
            case "fill-mask":
                return "这家餐厅的" + (maskToken == null ? "[MASK]" : maskToken) + "真好吃";
            case "feature-extraction":
                return "good food and friendly staff";
            default:
                return "这家餐厅的菜真好吃";
        }
    }

    /** A context to go with {@link #example} for question answering. */
    public static final String EXAMPLE_CONTEXT = "The hotel was right next to the station and very clean.";

    /** {@code model}'s result for {@code text} (and {@code context}), and the median latency of {@code runs} runs. */
    public String run(TextModel model, String text, String context, int runs) throws Exception {
        String task = model.task();
        if (action(task, model.outputs()) == null) {
            return "this screen has nothing for a " + task + " model";
        }
        Callable call = callFor(model, task, text, context);
        String result = call.run(); // also the warm-up, so the median below is steady-state
        double[] ms = new double[Math.max(1, runs)];
        for (int i = 0; i < ms.length; i++) {
            long t0 = System.nanoTime();
            call.run();
            ms[i] = (System.nanoTime() - t0) / 1e6;
        }
        return String.format(Locale.ROOT, "%s  (median %.1f ms of %d runs)\n%s", model.runner().name(),
                DeviceStats.median(ms), ms.length, result);
    }

    /** One run of the task, formatted. */
    private interface Callable {
        String run() throws Exception;
    }

    private Callable callFor(TextModel model, String task, String text, String context) throws Exception {
        switch (task) {
            case "question-answering":
                return () -> {
                    Answer a = model.answer(text, context);
                    return String.format(Locale.ROOT, "  \"%s\"  score %.3f  at [%d, %d)\n", a.text, a.score, a.start,
                            a.end);
                };
            case "fill-mask":
                return () -> fills(model.fillMask(text, FILLS));
            case "feature-extraction":
                SemanticSearch search = searches.get(model);
                if (search == null) {
                    search = new SemanticSearch(model, SemanticSearch.SENTENCES);
                    searches.put(model, search);
                }
                SemanticSearch found = search;
                return () -> hits(found.rank(text));
            default:
                return () -> {
                    Classifier.Prediction p = model.classify(text);
                    StringBuilder out = new StringBuilder("  " + p.label + "\n");
                    for (int i = 0; i < p.probabilities.length; i++) {
                        out.append(String.format(Locale.ROOT, "  %-10s %.3f\n", model.labels().get(i),
                                p.probabilities[i]));
                    }
                    return out.toString();
                };
        }
    }

    private static String fills(List<MaskFill> masks) {
        StringBuilder out = new StringBuilder();
        for (MaskFill m : masks) {
            out.append("  mask at token ").append(m.position).append(":");
            for (MaskFill.Candidate c : m.candidates) {
                out.append(String.format(Locale.ROOT, "  %s %.3f", c.token.strip(), c.score));
            }
            out.append('\n');
        }
        return out.toString();
    }

    private static String hits(List<SemanticSearch.Hit> hits) {
        StringBuilder out = new StringBuilder();
        for (SemanticSearch.Hit h : hits) {
            out.append(String.format(Locale.ROOT, "  %.3f  %s\n", h.cosine, h.sentence));
        }
        return out.toString();
    }
}
