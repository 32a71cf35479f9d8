"""A function node that needs a user's credential before it runs (`auth_config`), as the
reference's: without one in the session state (`temp:<credential_key>` or
`<credential_key>`), the run asks with an `adk_request_credential` call whose id is
`wf_auth:<node path>`; the answer (checked before it is stored, see
`baton.auth.auth_flow`) is put in the run's state under `temp:<credential_key>`, an OAuth2
sign-in's code exchanged for a token first, and the function runs, reading it with
`ctx.get_auth_response(auth_config)`. A credential the state holds whose OAuth2 token
expired is refreshed before the function runs, or asked for again when it cannot be."""

from __future__ import annotations

from typing import cast

from pydantic import JsonValue

from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_flow import (
    auth_request,
    credential_message,
    is_exchangeable,
    stored_credential_at,
    with_client,
)
from baton.auth.auth_tool import AuthConfig
from baton.auth.token_requests import exchanged, kept_form, needs_refresh, refreshed
from baton.context import Context
from baton.events import REQUEST_CREDENTIAL_FUNCTION, Event
from baton.types import Content, FunctionCall, Part

__all__ = ["auth_interrupt_id", "check_auth_config", "credential_gate"]


def auth_interrupt_id(node_path: str) -> str:
    """The id of the credential request of the node run at `node_path`."""
    return f"wf_auth:{node_path}"


def check_auth_config(name: str, auth_config: object, rerun_on_resume: bool | None) -> None:
    """Refuse an `auth_config` that is not an AuthConfig, or one without a rerun.

    Raises:
        TypeError: not an AuthConfig.
        ValueError: `rerun_on_resume=False` (the node runs again once answered).
    """
    if auth_config is None:
        return
    if not isinstance(auth_config, AuthConfig):
        raise TypeError(
            f"node '{name}' auth_config must be an AuthConfig (from baton.auth.auth_tool), "
            f"got {type(auth_config).__name__}."
        )
    if rerun_on_resume is False:
        raise ValueError(
            f"node '{name}' auth_config needs rerun_on_resume=True (the node runs again once "
            "the credential is given); leave rerun_on_resume out or set it True."
        )


async def credential_gate(config: AuthConfig, ctx: Context) -> Event | None:
    """The credential request the run yields instead of calling the body, or None when the
    body may run (the answer, or a credential the state holds, is in `ctx.state`).

    Raises:
        ConnectionError: the token endpoint refused an OAuth2 sign-in's code.
    """
    interrupt_id = auth_interrupt_id(ctx.node_path)
    answer: object = ctx.resume_inputs.get(interrupt_id)
    if isinstance(answer, dict):
        answered = cast(dict[str, JsonValue], answer).get("exchangedAuthCredential")
        credential = await _credential_of(config, answered)
        ctx.state[f"temp:{config.credential_key}"] = kept_form(credential)
        return None
    if await _has_fresh_credential(config, ctx):
        return None
    request: JsonValue = auth_request(config).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    args: dict[str, JsonValue] = {"functionCallId": interrupt_id, "authConfig": request}
    args["message"] = credential_message(args)
    call = FunctionCall(id=interrupt_id, name=REQUEST_CREDENTIAL_FUNCTION, args=args)
    return Event(
        content=Content(role="model", parts=[Part(function_call=call)]),
        long_running_tool_ids={interrupt_id},
    )


async def _credential_of(config: AuthConfig, answered: JsonValue) -> AuthCredential:
    credential = with_client(config, AuthCredential.model_validate(answered))
    if is_exchangeable(config, credential):
        credential = await exchanged(config, credential)
    return credential


async def _has_fresh_credential(config: AuthConfig, ctx: Context) -> bool:
    """Whether the state holds a credential for `config` the body can use: one whose
    OAuth2 token expired is refreshed and kept back where it was; one that cannot be
    refreshed counts as none, so the user is asked again."""
    found = stored_credential_at(config, ctx.state)
    if found is None:
        return False
    key, credential = found
    if not needs_refresh(config, credential):
        return True
    fresh = await refreshed(config, credential)
    if fresh is not None:
        ctx.state[key] = kept_form(fresh)
    return fresh is not None
