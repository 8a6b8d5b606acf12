package org.mobileexport.core;

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * {@code tokenize.sh ASSETS_DIR}: reads UTF-8 lines on stdin (split on '\n' only; invalid bytes
 * become U+FFFD) and writes one JSON array of input ids per line.
 */
public final class TokenizeMain {
    private TokenizeMain() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: tokenize.sh ASSETS_DIR  (the folder with tokenizer_settings.json)");
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
                    emit(enc, line, out);
                    pending = false;
                } else {
                    line.write(buf[i]);
                    pending = true;
                }
            }
        }
        if (pending) {
            emit(enc, line, out);
        }
        out.flush();
    }

    private static void emit(TextEncoder enc, ByteArrayOutputStream line, PrintStream out) {
        long[] ids = enc.encode(decode(line.toByteArray())).inputIds;
        line.reset();
        StringBuilder sb = new StringBuilder(ids.length * 6 + 2).append('[');
        for (int i = 0; i < ids.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(ids[i]);
        }
        out.print(sb.append("]\n"));
    }

    /** UTF-8 with each malformed sequence replaced by U+FFFD. */
    static String decode(byte[] bytes) {
        CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        try {
            return dec.decode(ByteBuffer.wrap(bytes)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new IllegalStateException(e);
        }
    }
}
