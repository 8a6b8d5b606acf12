package org.mobileexport.core;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

/**
 * How a .pte is called, from the methods it has (as Python's runner decides): the export's layer loop
 * ({@code embed}, then {@code layer_group_G} once per entry of {@code layer_schedule}, then {@code head})
 * when it has {@code embed}, else a plain {@code forward}. A head that reads model inputs (a phone head:
 * top-k fill-mask reads input_ids, mean pooling attention_mask) gets them after the hidden state, in the
 * order of the constant method {@code head_inputs} (indices among the three inputs). Written against
 * {@link Program} so the JVM
 * tests it with a fake of ExecuTorch's {@code Module}.
 *
 * <p>Outputs of a method may be views of that method's own planned memory (ExecuTorch's JNI wraps them
 * without copying), so each layer's output is copied before it is fed back into the same method: a memory
 * plan that lets an output overlap an input would otherwise read what it just overwrote.
 *
 * @param <V> the runtime's value type (ExecuTorch's {@code EValue})
 */
public final class LayerLoop<V> {
    /** The calls a .pte program offers. */
    public interface Program<V> {
        /** Runs {@code method}; its outputs may alias the method's own memory until its next call. */
        List<V> execute(String method, List<V> inputs) throws Exception;

        /** The integer a scalar output holds ({@code layer_schedule}'s entries). */
        long toLong(V value);

        /** A copy that owns its memory. */
        V copy(V value);
    }

    private final Program<V> program;
    private final List<String> layers; // null: plain forward
    private final List<Integer> headInputs; // indices among (input_ids, attention_mask, token_type_ids)

    private LayerLoop(Program<V> program, List<String> layers, List<Integer> headInputs) {
        this.program = program;
        this.layers = layers;
        this.headInputs = headInputs;
    }

    /** The calling convention of a program with {@code methods}; IOException if it has neither. */
    public static <V> LayerLoop<V> of(Program<V> program, Collection<String> methods) throws Exception {
        if (methods.contains("embed")) {
            for (String needed : Arrays.asList("layer_schedule", "head")) {
                if (!methods.contains(needed)) {
                    throw new IOException("the .pte has embed but no " + needed + " method; methods: " + methods);
                }
            }
            List<String> layers = new ArrayList<>();
            for (V g : program.execute("layer_schedule", new ArrayList<>())) {
                String name = "layer_group_" + program.toLong(g);
                if (!methods.contains(name)) {
                    throw new IOException("layer_schedule names " + name + ", which the .pte does not have");
                }
                layers.add(name);
            }
            List<Integer> headInputs = new ArrayList<>();
            if (methods.contains("head_inputs")) {
                for (V i : program.execute("head_inputs", new ArrayList<>())) {
                    long index = program.toLong(i);
                    if (index < 0 || index > 2) {
                        throw new IOException("head_inputs names input " + index + "; there are 3 inputs");
                    }
                    headInputs.add((int) index);
                }
            }
            return new LayerLoop<>(program, layers, headInputs);
        }
        if (methods.contains("forward")) {
            return new LayerLoop<>(program, null, new ArrayList<>());
        }
        throw new IOException("the .pte has neither the layer loop (embed, layer_schedule, head) nor forward; "
                + "methods: " + methods);
    }

    /** "layer loop (N layers)" or "forward". */
    public String describe() {
        return layers == null ? "forward" : "layer loop (" + layers.size() + " layers)";
    }

    /** The first output for {@code inputs} (input_ids, attention_mask, token_type_ids). */
    public V run(List<V> inputs) throws Exception {
        return runAll(inputs).get(0);
    }

    /** Every output for {@code inputs} (a top-k head has three: positions, ids, scores). */
    public List<V> runAll(List<V> inputs) throws Exception {
        if (layers == null) {
            return program.execute("forward", inputs);
        }
        List<V> stage = program.execute("embed", inputs);
        V hidden = program.copy(stage.get(0));
        V mask = program.copy(stage.get(1));
        for (String layer : layers) {
            hidden = program.copy(program.execute(layer, Arrays.asList(hidden, mask)).get(0));
        }
        List<V> headArgs = new ArrayList<>();
        headArgs.add(hidden);
        for (int i : headInputs) {
            headArgs.add(inputs.get(i));
        }
        return program.execute("head", headArgs);
    }
}
