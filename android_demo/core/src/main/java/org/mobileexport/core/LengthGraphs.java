package org.mobileexport.core;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashSet;
import java.util.Set;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * The NPU file's shorter graphs (Python's {@code backends.qnn.graphs}): each stored in the metadata entry
 * {@code mobile_export.qnn.graphs} as base64 of a zlib-compressed ONNX GraphProto without the weights it shares with
 * the file's own graph. {@link #modelFor} builds that length's model: the file's ModelProto fields but its graph and
 * metadata, and a graph of the stored one plus the file graph's initializers its nodes read. Read at the wire level
 * (ONNX's protobuf field numbers below), every length checked against the bytes: a damaged file is an
 * {@link IllegalArgumentException}.
 */
public final class LengthGraphs {
    public static final String KEY = "mobile_export.qnn.graphs";
    static final int MAX_GRAPH_BYTES = 256 << 20; // one graph inflated, as Python's MAX_GRAPH_BYTES

    private static final int MODEL_GRAPH = 7; // ModelProto.graph
    private static final int MODEL_METADATA = 14; // ModelProto.metadata_props
    private static final int GRAPH_NODE = 1; // GraphProto.node
    private static final int GRAPH_INITIALIZER = 5; // GraphProto.initializer
    private static final int NODE_INPUT = 1; // NodeProto.input
    private static final int TENSOR_NAME = 8; // TensorProto.name

    private LengthGraphs() {
    }

    /** The stored graph {@code base64} (one value of the entry's JSON object) inflated. */
    public static byte[] inflate(String base64) {
        byte[] packed = Base64.getDecoder().decode(base64);
        Inflater inflater = new Inflater();
        try {
            inflater.setInput(packed);
            ByteArrayOutputStream out = new ByteArrayOutputStream(packed.length * 4);
            byte[] chunk = new byte[1 << 16];
            while (!inflater.finished()) {
                int n = inflater.inflate(chunk);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new IllegalArgumentException("a stored graph is cut short; export it again");
                }
                out.write(chunk, 0, n);
                if (out.size() > MAX_GRAPH_BYTES) {
                    throw new IllegalArgumentException("a stored graph inflates past " + MAX_GRAPH_BYTES + " bytes");
                }
            }
            return out.toByteArray();
        } catch (DataFormatException e) {
            throw new IllegalArgumentException("a stored graph is not zlib data; export it again", e);
        } finally {
            inflater.end();
        }
    }

    /** The serialized model of one length: {@code model} (the whole file) with {@code graph} (inflated) as its graph. */
    public static byte[] modelFor(ByteBuffer model, byte[] graph) {
        ByteBuffer file = model.duplicate();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer mainGraph = null;
        while (file.hasRemaining()) {
            int start = file.position();
            long tag = varint(file);
            ByteBuffer body = skip(file, (int) (tag & 7));
            int field = (int) (tag >>> 3);
            if (field == MODEL_GRAPH) {
                mainGraph = body;
            } else if (field != MODEL_METADATA) {
                copy(model, start, file.position(), out);
            }
        }
        if (mainGraph == null) {
            throw new IllegalArgumentException("the model has no graph");
        }
        Set<String> read = new HashSet<>();
        Set<String> own = new HashSet<>();
        ByteBuffer stored = ByteBuffer.wrap(graph);
        while (stored.hasRemaining()) {
            long tag = varint(stored);
            ByteBuffer body = skip(stored, (int) (tag & 7));
            if ((tag >>> 3) == GRAPH_NODE && body != null) {
                read.addAll(strings(body, NODE_INPUT));
            } else if ((tag >>> 3) == GRAPH_INITIALIZER && body != null) {
                own.addAll(strings(body, TENSOR_NAME));
            }
        }
        ByteArrayOutputStream g = new ByteArrayOutputStream();
        g.write(graph, 0, graph.length);
        ByteBuffer main = mainGraph.duplicate();
        while (main.hasRemaining()) {
            int start = main.position();
            long tag = varint(main);
            ByteBuffer body = skip(main, (int) (tag & 7));
            if ((tag >>> 3) == GRAPH_INITIALIZER && body != null) {
                Set<String> names = strings(body, TENSOR_NAME);
                if (!names.isEmpty() && read.containsAll(names) && !own.containsAll(names)) {
                    copy(mainGraph, start, main.position(), g);
                }
            }
        }
        writeVarint(out, ((long) MODEL_GRAPH << 3) | 2);
        writeVarint(out, g.size());
        out.write(g.toByteArray(), 0, g.size());
        return out.toByteArray();
    }

    /** The string values of field {@code field} in the message {@code body}. */
    private static Set<String> strings(ByteBuffer body, int field) {
        Set<String> found = new HashSet<>();
        ByteBuffer b = body.duplicate();
        while (b.hasRemaining()) {
            long tag = varint(b);
            ByteBuffer value = skip(b, (int) (tag & 7));
            if ((tag >>> 3) == field && value != null) {
                byte[] raw = new byte[value.remaining()];
                value.duplicate().get(raw);
                found.add(new String(raw, StandardCharsets.UTF_8));
            }
        }
        return found;
    }

    /** Moves past one field's value; a length-delimited value's bytes as a slice, else null. */
    private static ByteBuffer skip(ByteBuffer b, int wire) {
        switch (wire) {
            case 0:
                varint(b);
                return null;
            case 1:
                advance(b, 8);
                return null;
            case 5:
                advance(b, 4);
                return null;
            case 2:
                long n = varint(b);
                if (n < 0 || n > b.remaining()) {
                    throw new IllegalArgumentException("a field's length runs past the model's bytes; export it again");
                }
                ByteBuffer slice = b.slice();
                slice.limit((int) n);
                advance(b, (int) n);
                return slice;
            default:
                throw new IllegalArgumentException("an unknown protobuf wire type " + wire + "; export it again");
        }
    }

    private static void advance(ByteBuffer b, int n) {
        if (n > b.remaining()) {
            throw new IllegalArgumentException("a field runs past the model's bytes; export it again");
        }
        b.position(b.position() + n);
    }

    private static long varint(ByteBuffer b) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (!b.hasRemaining()) {
                throw new IllegalArgumentException("a varint runs past the model's bytes; export it again");
            }
            byte next = b.get();
            value |= (long) (next & 0x7F) << shift;
            if ((next & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalArgumentException("a varint is longer than 10 bytes; export it again");
    }

    private static void writeVarint(ByteArrayOutputStream out, long value) {
        while ((value & ~0x7FL) != 0) {
            out.write((int) ((value & 0x7F) | 0x80));
            value >>>= 7;
        }
        out.write((int) value);
    }

    private static void copy(ByteBuffer from, int start, int end, ByteArrayOutputStream out) {
        byte[] raw = new byte[end - start];
        ByteBuffer d = from.duplicate();
        d.position(start);
        d.get(raw);
        out.write(raw, 0, raw.length);
    }
}
