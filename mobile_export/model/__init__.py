"""The checkpoint as PyTorch sees it: loading (folder or hub id, safetensors first), heads shaped for a
phone, the fp32 reference and its golden outputs, the model cut for the layer loop (``stages``) and the
model summary a report records, and the input ranges of each weight per channel and depth
(``activations``: which channels dominate a dynamic int8 scale)."""
