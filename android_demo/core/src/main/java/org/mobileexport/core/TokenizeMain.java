package org.mobileexport.core;

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;

/**
 * {@code tokenize.sh ASSETS_DIR [--offsets]}: reads UTF-8 lines on stdin (split on '\n' only; invalid bytes
 * become U+FFFD) and writes one JSON array of input ids per line; with {@code --offsets}, one JSON object per line:
 * the ids and each token's span in the line in code points (transformers' offset mapping; [0, 0] for special
 * tokens).
 */
public final class TokenizeMain {
    private TokenizeMain() {
    }

    public static void main(String[] args) throws IOException {
        boolean offsets = args.length == 2 && args[1].equals("--offsets");
        if (args.length != 1 && !offsets) {
            System.err.println("usage: tokenize.sh ASSETS_DIR [--offsets]  (the folder with tokenizer_settings.json)");
            System.exit(2);
        }
        TextEncoder enc;
        try {
            enc = TextEncoder.load(AssetSource.directory(new File(args[0])), "");
        } catch (IOException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, "UTF-8");
        InputStream in = System.in;
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        byte[] buf = new byte[1 << 16];
        boolean pending = false;
        for (int n; (n = in.read(buf)) > 0; ) {
            for (int i = 0; i < n; i++) {
                if (buf[i] == '\n') {
                    emit(enc, line, out, offsets);
                    pending = false;
                } else {
                    line.write(buf[i]);
                    pending = true;
                }
            }
        }
        if (pending) {
            emit(enc, line, out, offsets);
        }
        out.flush();
    }

    private static void emit(TextEncoder enc, ByteArrayOutputStream line, PrintStream out, boolean offsets) {
        String text = decode(line.toByteArray()); // valid Unicode already: no lone surrogates to sanitize
        line.reset();
        TextEncoder.Spans spans = enc.encodeSpans(text);
        long[] ids = spans.input.inputIds;
        StringBuilder sb = new StringBuilder(ids.length * 16 + 2).append(offsets ? "{\"ids\": [" : "[");
        for (int i = 0; i < ids.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(ids[i]);
        }
        if (offsets) {
            sb.append("], \"offsets\": [");
            for (int i = 0; i < ids.length; i++) {
                int start = text.codePointCount(0, spans.starts[i]);
                int end = start + text.codePointCount(spans.starts[i], spans.ends[i]);
                sb.append(i == 0 ? "[" : ", [").append(start).append(", ").append(end).append(']');
            }
            sb.append("]}");
        } else {
            sb.append(']');
        }
        out.print(sb.append('\n'));
    }

    /**
     * UTF-8 with each maximal ill-formed subpart replaced by one U+FFFD (Unicode's recommended practice, as Python's
     * {@code decode("utf-8", errors="replace")} does, so both sides tokenize the same text with the same offsets).
     */
    static String decode(byte[] bytes) {
        StringBuilder out = new StringBuilder(bytes.length);
        int i = 0;
        while (i < bytes.length) {
            int b0 = bytes[i] & 0xFF;
            if (b0 < 0x80) {
                out.append((char) b0);
                i++;
                continue;
            }
            int need;
            int lo = 0x80;
            int hi = 0xBF;
            if (b0 >= 0xC2 && b0 <= 0xDF) {
                need = 1;
            } else if (b0 >= 0xE0 && b0 <= 0xEF) {
                need = 2;
                lo = b0 == 0xE0 ? 0xA0 : 0x80;
                hi = b0 == 0xED ? 0x9F : 0xBF;
            } else if (b0 >= 0xF0 && b0 <= 0xF4) {
                need = 3;
                lo = b0 == 0xF0 ? 0x90 : 0x80;
                hi = b0 == 0xF4 ? 0x8F : 0xBF;
            } else {
                out.append('\uFFFD');
                i++;
                continue;
            }
            int cp = b0 & (0x3F >> need);
            int k = 1;
            for (; k <= need && i + k < bytes.length; k++) {
                int b = bytes[i + k] & 0xFF;
                if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
                    break;
                }
                cp = cp << 6 | (b & 0x3F);
            }
            if (k == need + 1) {
                out.appendCodePoint(cp);
            } else {
                out.append('\uFFFD');
            }
            i += k;
        }
        return out.toString();
    }
}
