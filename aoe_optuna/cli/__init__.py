"""The command-line programs: ``aoe-tune`` (with its subcommands) and ``aoe-optuna``."""
