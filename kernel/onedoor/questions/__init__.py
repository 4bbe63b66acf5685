"""Questions a run needs a person to answer, and their answers.

A backend asks (``await context.ask(question)`` or ``context.ask_sync(question)`` from a
worker thread); the door the run came through answers, in one of three ways it chooses
per run (:mod:`onedoor.questions.askers`). Two kinds of question:

``approval``  may the agent run this tool call? Outcomes: ``allow_once``,
              ``allow_always``, ``reject_once``, ``reject_always``. ``*_always`` is
              remembered for the rest of the run, per tool name.
``input``     a free-form question whose answer is an object described by a small
              JSON Schema (the "form" subset every door can render: a flat object of
              strings, numbers, integers, booleans and enums; MCP elicitation's subset).
              Outcomes: ``accept`` (with a ``value``), ``decline``, ``cancel``.

Questions and answers are frozen and turn into JSON objects and back
(``to_dict``/``from_dict``). Answers given by a client are checked with
:func:`check_answer` before a backend sees them.

How a door answers them is an *asker* (:mod:`onedoor.questions.askers`): ``LiveAsker``,
``SuspendAsker`` or ``PolicyAsker``.
"""

from ._model import (
    APPROVAL,
    APPROVAL_OUTCOMES,
    HOW,
    INPUT,
    INPUT_OUTCOMES,
    Answer,
    Question,
    QuestionError,
    check_answer,
    check_form_schema,
    clip,
    closing_answer,
    form_problem,
    new_question_id,
    policy_answer,
)
from .askers import (
    POLICIES,
    SILENT_DENY,
    Asker,
    AskFallback,
    LiveAsker,
    PolicyAsker,
    SuspendAsker,
    check_policy,
    coerce_answer,
    from_approver,
)

__all__ = [
    "APPROVAL", "APPROVAL_OUTCOMES", "HOW", "INPUT", "INPUT_OUTCOMES", "POLICIES", "SILENT_DENY", "Answer", "Asker",
    "AskFallback", "LiveAsker", "PolicyAsker", "check_policy", "Question", "QuestionError", "SuspendAsker", "check_answer", "check_form_schema", "clip",
    "closing_answer", "coerce_answer", "form_problem", "from_approver", "new_question_id", "policy_answer",
]
