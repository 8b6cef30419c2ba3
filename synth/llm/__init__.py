"""One OpenAI-compatible chat-completions client for every LLM role of synthesis.

Roles (``task_writer``, ``policy``, ``emulator``, ``judge``) are configured in ``[synth.llm.<role>]``
(:class:`toolscale.config.LLMRoleSpec`); a role left out keeps its offline template.

==========================  ===================================================================
module                      holds
==========================  ===================================================================
:mod:`synth.llm.models`     contracts: :class:`ChatReply`, :class:`ReplyToolCall`, :class:`LLMUsage`
:mod:`synth.llm.client`     :class:`LLMClient` (async core, sync and batch wrappers, retries, accounting)
:mod:`synth.llm.cache`      :class:`ResponseCache`, content-addressed, safe across processes
:mod:`synth.llm.toolcalls`  :func:`check_tool_calls`: unknown tools, truncated or schema-violating arguments
:mod:`synth.llm.scripted`   :class:`ScriptedEndpoint`, a scripted server for fault tests and benchmarks
==========================  ===================================================================

Usage (the whole interface the roles need)::

    from synth.llm.client import LLMClient
    with LLMClient(recipe.llm, cache="~/.cache/toolscale/llm") as llm:
        llm.check()                                   # fails in seconds, naming the URL, if an endpoint is down
        reply = llm.chat("policy", messages, tools=tool_schemas)
        reply.tool_calls[0].name, reply.tool_calls[0].arguments   # arguments: the JSON string as sent
        problems = check_tool_calls(reply, tool_schemas)          # reasons to reject, [] if fine
        usage = llm.usage()                                       # {role: LLMUsage}

Importing this package is cheap: the HTTP client is imported by :mod:`synth.llm.client` only.
"""
