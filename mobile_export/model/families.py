"""Encoder families as data: how a checkpoint of each maps onto the stages the tool exports (embed, the layers or
layer groups, head), the inputs its models take, its masked-LM head, how its weights group in a size breakdown,
and the config fields a report records (the repairs' exact folds are ``quantize.smooth.FOLDS``). One registry;
``mobile-export list`` prints it.

ALBERT runs one shared layer group for every depth (``layer_schedule`` [0] * layers), stored and packed once; the
others (BERT, ELECTRA, DistilBERT, RoBERTa, XLM-R, CamemBERT) have L distinct layers, the same machinery with L groups
each run once. Every family takes ``input_ids`` and ``attention_mask``; ALBERT, BERT and ELECTRA also
``token_type_ids`` (a family's inputs are a prefix of ``core.signature.INPUT_NAMES``, in that order). RoBERTa, XLM-R
and CamemBERT (RoBERTa's layout under other class names) number positions from after the padding index
(``positions_after_padding``): the artifact computes them from the mask, so an app feeds them exactly as it feeds a
BERT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import CheckpointError
from ..core.signature import ENCODER, INPUT_NAMES, Signature

# The parts of a size breakdown every family has (a family adds its own between them).
WORD_EMBEDDINGS = "word embeddings"
OTHER_EMBEDDINGS = "position/type embeddings"
PROJECTION = "embedding projection"
POOLER = "pooler"
TASK_HEAD = "task head"


@dataclass(frozen=True)
class Family:
    """One encoder family: a checkpoint's modules named by their path from the base model (``model.base_model``)."""

    name: str
    model_types: tuple[str, ...]  # config.json's model_type values it reads
    signature: Signature  # the inputs its models take
    layers: str  # the ModuleList of layer groups (ALBERT) or layers
    encoder: str  # the module that runs them (a pass-through in the head, where the layers already ran)
    projection: str | None  # the embeddings' map to the hidden width, when the model has one
    layer_classes: tuple[str, ...]  # module classes each of whose calls is one depth (the error by layer)
    shared: bool  # its layer groups run at several depths (ALBERT)
    mlm_head: tuple[str, ...]  # the masked-LM model's modules from hidden state to vocabulary logits, in order
    layer_part: str  # the size breakdown's name for the layers' weights
    parts: tuple[tuple[str, str], ...]  # (fragment of a parameter name, part) checked before the common ones
    summary_keys: tuple[str, ...]  # the config fields a report records (enough to rebuild the shapes)
    # position ids are padding_idx + cumsum(mask) (RoBERTa's rule), passed to the embeddings; else theirs
    positions_after_padding: bool = False

    @property
    def size_parts(self) -> tuple[str, ...]:
        """The parts of a size breakdown, in order."""
        projection = (PROJECTION,) if self.projection else ()
        return (WORD_EMBEDDINGS, OTHER_EMBEDDINGS, *projection, self.layer_part, POOLER, TASK_HEAD)

    def part_of(self, name: str) -> str:
        """The size breakdown's part of the parameter ``name``."""
        if "word_embeddings" in name:
            return WORD_EMBEDDINGS
        for fragment, part in self.parts:
            if fragment in name:
                return part
        if ".embeddings." in f".{name}":
            return OTHER_EMBEDDINGS
        if "pooler" in name:
            return POOLER
        return TASK_HEAD

    def layer_schedule(self, config: Any) -> list[int]:
        """Which layer group runs at each depth (ALBERT: transformers' AlbertTransformer rule; else each once)."""
        layers = int(config.num_hidden_layers)
        if not self.shared:
            return list(range(layers))
        groups = int(config.num_hidden_groups)
        return [int(i / (layers / groups)) for i in range(layers)]

    def module(self, base: Any, path: str | None) -> Any:
        """The module at ``path`` from ``base`` (None where the path or the module is absent)."""
        if path is None:
            return None
        try:
            return base.get_submodule(path)
        except AttributeError:
            return None

    def mlm_modules(self, model: Any) -> list[Any]:
        """The masked-LM head's modules of ``model``, in the order they run."""
        return [model.get_submodule(name) for name in self.mlm_head]


_BERT_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
    "hidden_act",
    "tie_word_embeddings",
)

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            name="albert",
            model_types=("albert",),
            signature=ENCODER,
            layers="encoder.albert_layer_groups",
            encoder="encoder",
            projection="encoder.embedding_hidden_mapping_in",
            layer_classes=("AlbertLayer",),
            shared=True,
            mlm_head=("predictions",),
            layer_part="shared encoder layer",
            parts=(("embedding_hidden_mapping_in", PROJECTION), ("albert_layer_groups", "shared encoder layer")),
            summary_keys=(
                "vocab_size",
                "embedding_size",
                "hidden_size",
                "num_hidden_layers",
                "num_hidden_groups",
                "inner_group_num",
                "num_attention_heads",
                "intermediate_size",
                "max_position_embeddings",
                "type_vocab_size",
                "hidden_act",
                "tie_word_embeddings",
            ),
        ),
        Family(
            name="bert",
            model_types=("bert",),
            signature=ENCODER,
            layers="encoder.layer",
            encoder="encoder",
            projection=None,
            layer_classes=("BertLayer",),
            shared=False,
            mlm_head=("cls",),
            layer_part="encoder layers",
            parts=(("encoder.layer.", "encoder layers"),),
            summary_keys=_BERT_KEYS,
        ),
        Family(
            name="electra",
            model_types=("electra",),
            signature=ENCODER,
            layers="encoder.layer",
            encoder="encoder",
            projection="embeddings_project",
            layer_classes=("ElectraLayer",),
            shared=False,
            mlm_head=("generator_predictions", "generator_lm_head"),
            layer_part="encoder layers",
            parts=(("embeddings_project", PROJECTION), ("encoder.layer.", "encoder layers")),
            summary_keys=(*_BERT_KEYS[:1], "embedding_size", *_BERT_KEYS[1:]),
        ),
        Family(
            name="distilbert",
            model_types=("distilbert",),
            signature=Signature(INPUT_NAMES[:2]),
            layers="transformer.layer",
            encoder="transformer",
            projection=None,
            layer_classes=("TransformerBlock",),
            shared=False,
            mlm_head=("vocab_transform", "activation", "vocab_layer_norm", "vocab_projector"),
            layer_part="encoder layers",
            parts=(("transformer.layer.", "encoder layers"),),
            summary_keys=(
                "vocab_size",
                "dim",
                "n_layers",
                "n_heads",
                "hidden_dim",
                "max_position_embeddings",
                "activation",
                "sinusoidal_pos_embds",
                "tie_word_embeddings",
            ),
        ),
    )
}


_ROBERTA_KEYS = (*_BERT_KEYS[:-1], "pad_token_id", "layer_norm_eps", _BERT_KEYS[-1])


def _roberta_like(name: str, model_type: str, layer_class: str) -> Family:
    """RoBERTa's layout (XLM-R's is the same under other class names): BERT's layers, one token type (the
    artifact takes no ``token_type_ids``), positions after the padding index, the masked-LM head ``lm_head``
    (dense, gelu, layer norm, the decoder tied to the word table)."""
    return Family(
        name=name,
        model_types=(model_type,),
        signature=Signature(INPUT_NAMES[:2]),
        layers="encoder.layer",
        encoder="encoder",
        projection=None,
        layer_classes=(layer_class,),
        shared=False,
        mlm_head=("lm_head",),
        layer_part="encoder layers",
        parts=(("encoder.layer.", "encoder layers"),),
        summary_keys=_ROBERTA_KEYS,
        positions_after_padding=True,
    )


FAMILIES.update(
    {
        f.name: f
        for f in (
            _roberta_like("roberta", "roberta", "RobertaLayer"),
            _roberta_like("xlm-roberta", "xlm-roberta", "XLMRobertaLayer"),
            _roberta_like("camembert", "camembert", "CamembertLayer"),
        )
    }
)


def longest_input(config: Any) -> int:
    """The most tokens a model of ``config`` (a transformers config or config.json's dict) takes: its position
    table's size, less the padding index and one where positions start after it (RoBERTa's 514 -> 512)."""
    get = config.get if isinstance(config, dict) else lambda key, default=None: getattr(config, key, default)
    limit = int(get("max_position_embeddings", 512) or 512)
    family = next((f for f in FAMILIES.values() if get("model_type") in f.model_types), None)
    if family is not None and family.positions_after_padding:
        limit -= int(get("pad_token_id", 1) or 0) + 1
    return limit


def supported_model_types() -> list[str]:
    """Every config.json ``model_type`` a family reads."""
    return [t for f in FAMILIES.values() for t in f.model_types]


def family_of(model_type: str | None) -> Family:
    """The family of a config's ``model_type``; CheckpointError naming the supported ones otherwise."""
    for family in FAMILIES.values():
        if model_type in family.model_types:
            return family
    raise CheckpointError(
        f"model_type '{model_type}' is not supported; supported: {', '.join(supported_model_types())}"
    )
