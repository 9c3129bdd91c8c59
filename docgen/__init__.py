"""The reference pages made from the code: manual pages (:mod:`docgen.manpages`, written
in roff by :mod:`docgen.roff`) and bash completion (:mod:`docgen.completion`), from the
four commands' argparse parsers and the configuration schema.

``python -m docgen`` writes them under ``man/`` and ``completion/``; tests compare the
committed files with what it writes, so a command, option or key added in the code is on
its page once they are made again.  They live outside ``client/`` because one of the
commands, ``x400-mta``, is the daemon's (:mod:`mta.command`), which no client module
imports.  The package is not installed: the files it writes are (pyproject.toml's
data-files, into ``share/man`` and ``share/bash-completion/completions``).
"""
