class PreTrainedTokenizerFast:
    """What AutoTokenizer returns on a simulated host: the checkpoint's tokenizer files, as read."""

    def __init__(self, path, config):
        self.name_or_path = str(path)
        self.init_kwargs = config
