"""The MCP server's error messages name the tools' parameters, not the CLI's flags."""

from __future__ import annotations

from toolscale.cli.mcp_server import mcp_words


def test_flags_become_parameter_names():
    msg = ("experiment 'byo' has imported runs and the config has no [[ladder]]: pass --model-size N and --tokens D "
           "(or --tokens-per-param R)")
    assert mcp_words(msg) == ("experiment 'byo' has imported runs and the config has no [[ladder]]: pass model_size N "
                              "and tokens D (or tokens_per_param R)")
    assert mcp_words("a range 1--2 and x--y stay; ---- too") == "a range 1--2 and x--y stay; ---- too"
