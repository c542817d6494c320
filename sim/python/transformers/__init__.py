"""Simulated transformers (see narwhal_sim_python.py): AutoTokenizer, with the rules sim/engine/tokenizer.ts applies."""
import json
from pathlib import Path

from transformers.tokenization_utils_fast import PreTrainedTokenizerFast

__version__ = "4.57.1"


def _read(path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as error:
        raise OSError("Unable to load tokenizer file %s: not valid JSON" % path) from error


class AutoTokenizer:
    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *inputs, trust_remote_code=None, local_files_only=False, **kwargs):
        path = str(pretrained_model_name_or_path)
        directory = Path(path)
        config = _read(directory / "tokenizer_config.json") if directory.is_dir() else None
        tokenizer = _read(directory / "tokenizer.json") if directory.is_dir() else None
        if config is None and tokenizer is None:
            raise OSError(
                "Can't load tokenizer for '%s'. If you were trying to load it from 'https://huggingface.co/models', "
                "make sure you don't have a local directory with the same name. Otherwise, make sure '%s' is the "
                "correct path to a directory containing all relevant files for a LlamaTokenizerFast tokenizer." % (path, path)
            )
        # A tokenizer class shipped as code needs the same consent as a custom model class.
        if config is not None and "auto_map" in config and not trust_remote_code:
            raise ValueError(
                "The repository %s contains custom code which must be executed to correctly load the model. "
                "You can inspect the repository content at %s .\n"
                "Please pass the argument `trust_remote_code=True` to allow custom code to be run." % (path, path)
            )
        return PreTrainedTokenizerFast(path, config or {})
