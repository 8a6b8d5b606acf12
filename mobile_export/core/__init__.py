"""Foundations every other package stands on, importing nothing of the project: errors and exit codes,
options and thresholds (``config``), tasks, the export folder's file names (``files``), the artifact's
signature (``signature``), the text rule both tokenizers apply (``text``), the checking host's CPU
(``host``), atomic writes (``fsutil``), progress lines, the Ctrl-C latch and the library silencer."""
