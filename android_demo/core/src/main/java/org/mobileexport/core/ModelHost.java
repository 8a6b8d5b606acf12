package org.mobileexport.core;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * One process-wide set of loaded models shared by every screen that uses it: loaded when the first
 * screen takes a {@link Lease}, closed when the last lease closes. Every load, run and close happens
 * on one worker thread that is never shut down. Because that thread runs tasks in order, a close always
 * comes after the load it closes and a new load after the previous close: two model sets never load at
 * the same time or sit in RAM together, and a task from a screen that has left is dropped, not rejected.
 *
 * @param <M> the loaded models (closed on the worker when the last lease closes)
 */
public final class ModelHost<M extends AutoCloseable> {
    /** Loads the models on the worker. */
    public interface Loader<M> {
        M load() throws Exception;
    }

    private final Loader<M> loader;
    private final ExecutorService worker;
    private final Consumer<Throwable> onError;
    private int leases; // guarded by this
    private int generation; // guarded by this; changes when the last lease closes
    private M models; // read and written on the worker only
    private Throwable loadError; // worker only

    /**
     * @param loader loads the models (on the worker)
     * @param onError told about a load or close that threw (e.g. to log it); tasks then see null models
     */
    public ModelHost(Loader<M> loader, Consumer<Throwable> onError) {
        this.loader = loader;
        this.onError = onError;
        this.worker = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "mobile-export-models");
            t.setDaemon(true);
            return t;
        });
    }

    /** A screen starts using the models; the first lease (again) starts loading them. */
    public synchronized Lease acquire() {
        if (leases++ == 0) {
            int gen = generation;
            worker.execute(() -> {
                if (isCurrent(gen) && models == null) {
                    try {
                        loadError = null;
                        models = loader.load();
                    } catch (Exception | Error e) { // UnsatisfiedLinkError from a native library too
                        loadError = e;
                        onError.accept(e);
                    }
                }
            });
        }
        return new Lease(generation);
    }

    private synchronized boolean isCurrent(int gen) {
        return leases > 0 && generation == gen;
    }

    private synchronized void returned() {
        if (--leases == 0) {
            generation++;
            worker.execute(this::closeModels);
        }
    }

    private void closeModels() {
        if (models != null) {
            try {
                models.close();
            } catch (Exception e) {
                onError.accept(e);
            }
            models = null;
        }
    }

    /** What a task is handed: the models, or null with the reason they did not load. */
    public interface Task<M> {
        void run(M models, Throwable loadError);
    }

    /**
     * One screen's use of the models. It survives a configuration change (hand it to the new activity);
     * closing it drops its queued tasks, and the last close frees the models.
     */
    public final class Lease implements AutoCloseable {
        private final int gen;
        private boolean open = true; // guarded by ModelHost.this
        private BiConsumer<String, String> observer; // guarded by this lease
        private final Map<String, String> latest = new LinkedHashMap<>(); // guarded by this lease

        private Lease(int gen) {
            this.gen = gen;
        }

        /** Runs {@code task} on the worker after the load, unless this lease closed before its turn. */
        public void submit(Task<M> task) {
            synchronized (ModelHost.this) {
                if (!open) {
                    return;
                }
            }
            worker.execute(() -> {
                synchronized (ModelHost.this) {
                    if (!open || generation != gen) {
                        return;
                    }
                }
                task.run(models, loadError);
            });
        }

        /**
         * Keeps {@code text} as this lease's latest result under {@code key} (e.g. "status", "result")
         * and hands it to the current observer, if any: a result that arrives while the screen is being
         * recreated reaches the new screen.
         */
        public synchronized void publish(String key, String text) {
            latest.put(key, text);
            if (observer != null) {
                observer.accept(key, text);
            }
        }

        /** Sets who receives results (null: nobody, e.g. while a screen is destroyed); replays the latest. */
        public synchronized void observe(BiConsumer<String, String> next) {
            observer = next;
            if (next != null) {
                latest.forEach(next);
            }
        }

        public boolean isOpen() {
            synchronized (ModelHost.this) {
                return open;
            }
        }

        /** Ends this screen's use (again: no effect); the last lease frees the models on the worker. */
        @Override
        public void close() {
            synchronized (ModelHost.this) {
                if (!open) {
                    return;
                }
                open = false;
                returned();
            }
            observe(null);
        }
    }
}
