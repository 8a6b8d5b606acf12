package org.mobileexport.core;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.json.JSONObject;

/**
 * The named metadata entries of a .tflite (LiteRT's schema: {@code Model.metadata}, each a name and a buffer index),
 * read straight from the flatbuffer. LiteRT's Java Interpreter hands out no metadata, and the export's
 * self-description (tokenizer, labels, facts, golden examples) lives there. Every offset is checked against the
 * file's bounds: a truncated or crafted file is an {@link IllegalArgumentException}, never a wild read.
 */
public final class TfliteMetadata {
    private static final int MODEL_BUFFERS = 4; // field ids of LiteRT's schema.fbs (table Model)
    private static final int MODEL_METADATA = 6;
    private static final int METADATA_NAME = 0; // table Metadata
    private static final int METADATA_BUFFER = 1;
    private static final int BUFFER_DATA = 0; // table Buffer: inside the flatbuffer, or at offset/size after it
    private static final int BUFFER_OFFSET = 1;
    private static final int BUFFER_SIZE = 2;

    private final ByteBuffer file;

    private TfliteMetadata(ByteBuffer file) {
        this.file = file.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The entries of the .tflite in {@code file} (position 0 is the file's first byte), name to bytes, in order. */
    public static Map<String, byte[]> entries(ByteBuffer file) {
        return new TfliteMetadata(file).read();
    }

    /** The entries of the .tflite at {@code path}, mapped read-only (the weights are never copied). */
    public static Map<String, byte[]> entries(String path) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(path, "r"); FileChannel channel = raf.getChannel()) {
            return entries(channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size()));
        }
    }

    /** The entry {@code key} as UTF-8 text, or null when the file has none. */
    public static String text(Map<String, byte[]> entries, String key) {
        byte[] raw = entries.get(key);
        return raw == null ? null : new String(raw, StandardCharsets.UTF_8);
    }

    private Map<String, byte[]> read() {
        if (file.limit() < 8 || file.get(4) != 'T' || file.get(5) != 'F' || file.get(6) != 'L' || file.get(7) != '3') {
            throw bad("no TFL3 flatbuffer identifier");
        }
        int model = indirect(0);
        Map<String, byte[]> found = new LinkedHashMap<>();
        int metadata = field(model, MODEL_METADATA);
        int buffers = field(model, MODEL_BUFFERS);
        if (metadata == 0) {
            return found;
        }
        int vector = indirect(metadata);
        int count = length(vector, 4);
        for (int k = 0; k < count; k++) {
            int entry = indirect(vector + 4 + 4 * k);
            int name = field(entry, METADATA_NAME);
            int index = field(entry, METADATA_BUFFER);
            if (name == 0 || index == 0 || buffers == 0) {
                throw bad("metadata entry " + k + " lacks its name or buffer");
            }
            found.put(string(indirect(name)), buffer(indirect(buffers), u32(index)));
        }
        return found;
    }

    /** The bytes of buffer {@code index}: its data vector, or the range after the flatbuffer it points at. */
    private byte[] buffer(int vector, long index) {
        int count = length(vector, 4);
        if (index >= count) {
            throw bad("a metadata entry names buffer " + index + " of " + count);
        }
        int table = indirect(vector + 4 + 4 * (int) index);
        int data = field(table, BUFFER_DATA);
        if (data != 0) {
            int bytes = indirect(data);
            return slice(bytes + 4, length(bytes, 1));
        }
        int offset = field(table, BUFFER_OFFSET);
        int size = field(table, BUFFER_SIZE);
        if (offset == 0 || size == 0 || u64(offset) <= 1) {
            return new byte[0];
        }
        long start = u64(offset);
        long n = u64(size);
        if (start < 0 || n < 0 || start > file.limit() || n > file.limit() - start) {
            throw bad("a buffer lies outside the file");
        }
        return slice((int) start, (int) n);
    }

    /** The absolute position of field {@code id} of the table at {@code table}, or 0 when the field is absent. */
    private int field(int table, int id) {
        long vtable = (long) table - i32(table);
        check(vtable, 4);
        int vtableSize = u16((int) vtable);
        int slot = 4 + 2 * id;
        if (slot + 2 > vtableSize) {
            return 0;
        }
        check(vtable + slot, 2);
        int offset = u16((int) vtable + slot);
        return offset == 0 ? 0 : table + offset;
    }

    /** The position an offset stored at {@code at} points to. */
    private int indirect(int at) {
        long target = at + u32(at);
        check(target, 4);
        return (int) target;
    }

    /** The element count of the vector at {@code at}, checked to fit the file at {@code width} bytes each. */
    private int length(int at, int width) {
        long n = u32(at);
        check(at + 4L, n * width);
        return (int) n;
    }

    private String string(int at) {
        return new String(slice(at + 4, length(at, 1)), StandardCharsets.UTF_8);
    }

    private byte[] slice(int start, int n) {
        check(start, n);
        byte[] out = new byte[n];
        file.duplicate().position(start).get(out);
        return out;
    }

    private long u32(int at) {
        check(at, 4);
        return file.getInt(at) & 0xFFFFFFFFL;
    }

    private int i32(int at) {
        check(at, 4);
        return file.getInt(at);
    }

    private int u16(int at) {
        check(at, 2);
        return file.getShort(at) & 0xFFFF;
    }

    private long u64(int at) {
        check(at, 8);
        return file.getLong(at);
    }

    private void check(long at, long n) {
        if (at < 0 || n < 0 || at + n > file.limit()) {
            throw bad("an offset points outside the file (truncated?)");
        }
    }

    private static IllegalArgumentException bad(String why) {
        return new IllegalArgumentException("not a readable .tflite: " + why + "; export it again");
    }

    /** Prints the entries of the .tflite named on the command line as JSON (name to base64); exit 2 when refused. */
    public static void main(String[] args) throws IOException {
        try {
            JSONObject out = new JSONObject();
            for (Map.Entry<String, byte[]> e : entries(args[0]).entrySet()) {
                out.put(e.getKey(), Base64.getEncoder().encodeToString(e.getValue()));
            }
            System.out.println(out.toString());
        } catch (IllegalArgumentException | org.json.JSONException e) {
            System.err.println(e.getMessage());
            System.exit(2);
        }
    }
}
