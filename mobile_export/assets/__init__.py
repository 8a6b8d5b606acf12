"""What an app needs beside the model: the tokenizer assets (``tokenizer``), the Java tokenizer's
Unicode tables probed from the real normalizer (``ondevice``), labels and the score function (``labels``)."""
