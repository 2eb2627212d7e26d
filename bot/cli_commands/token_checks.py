"""``doctor``'s live token checks: one authenticated call per configured platform.

A token can look well-formed and still be refused (revoked, or copied from another bot), and
the platform can be unreachable from this machine; both show only at ``run`` otherwise. Discord
is asked ``GET users/@me`` and Telegram ``getMe``, each within :data:`TOKEN_CHECK_TIMEOUT_S`.
The token never appears in what is reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from engine.redaction import redact_text

TOKEN_CHECK_TIMEOUT_S: Final = 5.0
"""How long one platform gets to answer the token check before it counts as unreachable."""
DISCORD_API: Final = "https://discord.com/api/v10"
"""Discord's REST base when ``[discord] api_base`` is not set."""
TELEGRAM_API: Final = "https://api.telegram.org"
"""The Bot API server when ``[telegram] api_base`` is not set."""


@dataclass(frozen=True, slots=True)
class TokenCheck:
    """What one live check found: ``ok`` with a detail line, or not with the reason."""

    ok: bool
    detail: str


async def _call(
    method: str,
    url: str,
    *,
    token: str,
    where: str,
    setting: str,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, object]] | TokenCheck:
    """The status and JSON body of one request, or the failed check when unreachable."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=TOKEN_CHECK_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.request(method, url, headers=headers) as response,
        ):
            try:
                body = await response.json(content_type=None)
            except ValueError:
                body = {}
            return response.status, body if isinstance(body, dict) else {}
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        reason = redact_text(str(exc).replace(token, "***")) or type(exc).__name__
        if isinstance(exc, TimeoutError):
            reason = f"no answer within {TOKEN_CHECK_TIMEOUT_S:g}s"
        return TokenCheck(False, f"cannot reach {where} ({setting}): {reason}")


async def check_discord(token: str, api_base: str | None) -> TokenCheck:
    """Ask Discord who the token belongs to."""
    base = (api_base or DISCORD_API).rstrip("/")
    answer = await _call(
        "GET",
        f"{base}/users/@me",
        token=token,
        where=base,
        setting="[discord] api_base",
        headers={"Authorization": f"Bot {token}"},
    )
    if isinstance(answer, TokenCheck):
        return answer
    status, body = answer
    if status == 200:
        return TokenCheck(True, f"accepted by {base} (bot {body.get('username', '?')})")
    if status == 401:
        return TokenCheck(
            False, f"refused by {base} (401); copy it again from the developer portal's Bot page"
        )
    return TokenCheck(False, f"{base} answered {status} to users/@me")


async def check_telegram(token: str, api_base: str | None) -> TokenCheck:
    """Ask Telegram's getMe who the token belongs to."""
    base = (api_base or TELEGRAM_API).rstrip("/")
    answer = await _call(
        "POST", f"{base}/bot{token}/getMe", token=token, where=base, setting="[telegram] api_base"
    )
    if isinstance(answer, TokenCheck):
        return answer
    status, body = answer
    result = body.get("result")
    if status == 200 and isinstance(result, dict):
        return TokenCheck(True, f"accepted by {base} (@{result.get('username', '?')})")
    if status in (401, 404):
        return TokenCheck(
            False, f"refused by {base} ({status}); check it with the bot's owner (BotFather)"
        )
    return TokenCheck(False, f"{base} answered {status} to getMe")
