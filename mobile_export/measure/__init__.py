"""What an artifact costs a phone: bytes by part and weight sharing (``size``), RAM in a fresh process
(``memory``), app-bundle budgets, latency (``bench``) and the child processes they measure in. The
``size`` command's report, which reads report.json too, is ``reports.size``."""
