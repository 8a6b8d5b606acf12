"""The ``mobile-export`` command: ``main`` (exit codes, one-line errors, Ctrl-C), the argument parser and
``run`` (texts from arguments or stdin); every other command is one library call."""
