"""One Messages API request as a team member makes it: the team's budget checked first, the
team's rate-limit gate waited at, retries of our own (the SDK's are off, so that every retry
passes the shared gate), and the usage recorded against the agent."""

from __future__ import annotations

import os
import random
import time
from typing import Any

import anthropic
from anthropic.types import Message

from ipc.budget_check import over_budget
from ipc.paths import TeamPaths
from ipc.ratelimit import RateLimiter, retry_after
from ipc.usage import Tokens, UsageBook

RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}


class OverBudget(Exception):
    """A limit of ``budget.json`` is reached: no request was made."""


class StreamCut(Exception):
    """A response stream that had started ended before its message did."""


class ApiFailure(Exception):
    """The API refused or could not be reached, after the retries."""


def tokens_of(usage: Any) -> Tokens:
    return Tokens(
        input=usage.input_tokens or 0,
        output=usage.output_tokens or 0,
        cache_read=getattr(usage, "cache_read_input_tokens", None) or 0,
        cache_write=getattr(usage, "cache_creation_input_tokens", None) or 0,
        requests=1,
    )


class ApiCaller:
    def __init__(self, paths: TeamPaths, agent: str, model: str) -> None:
        self.paths = paths
        self.agent = agent
        self.model = model
        self.client = anthropic.Anthropic(
            max_retries=0, timeout=float(os.environ.get("AGENTTEAMS_API_TIMEOUT", "120"))
        )
        self.retries = int(os.environ.get("AGENTTEAMS_API_RETRIES", "4"))  # 5xx, timeouts
        self.rate_limit_retries = int(os.environ.get("AGENTTEAMS_RATE_LIMIT_RETRIES", "20"))
        self.limiter = RateLimiter(paths, model)
        self.usage = UsageBook(paths, agent)
        self.last = Tokens()  # the last response's usage

    def budget_problem(self) -> str:
        return over_budget(self.paths, self.agent)

    def create(self, **params: Any) -> Message:
        """``messages.create`` with ``model`` filled in, streamed (a long output would outlast
        a request's timeout; a stream's timeout is per read); raises OverBudget or ApiFailure."""
        reason = self.budget_problem()
        if reason:
            raise OverBudget(reason)
        failures = limited = 0
        while True:
            self.limiter.wait()
            try:
                message, headers = self._stream(params)
            except anthropic.APIStatusError as exc:
                wait = retry_after(exc.response.headers)
                if exc.status_code == 429 and limited < self.rate_limit_retries:
                    limited += 1  # the team's limit: close the gate for everyone, then retry
                    self.limiter.close_for(wait if wait is not None else self._backoff(limited), "429")
                    continue
                # An error event inside a stream that had started (status 200) is the
                # server's trouble mid-way (overloaded), retried as a 5xx is.
                retryable = exc.status_code in RETRYABLE or exc.status_code == 200
                if not retryable or failures >= self.retries:
                    raise ApiFailure(f"Anthropic API error {exc.status_code}: {exc.message}") from exc
                failures += 1
                time.sleep(wait if wait is not None else self._backoff(failures))
                continue
            except (anthropic.APIConnectionError, StreamCut) as exc:
                if failures >= self.retries:
                    raise ApiFailure(f"Anthropic API error: {exc}") from exc
                failures += 1
                time.sleep(self._backoff(failures))
                continue
            self.limiter.observe(headers)
            self.last = tokens_of(message.usage)
            self.usage.record(self.model, self.last)
            return message

    def _stream(self, params: dict[str, Any]) -> tuple[Message, Any]:
        with self.client.messages.stream(model=self.model, **params) as stream:
            headers = stream.response.headers
            try:
                return stream.get_final_message(), headers
            except anthropic.APIError:
                raise
            except Exception as exc:  # the HTTP library's own errors: the stream was cut
                raise StreamCut(f"the response stream was cut off ({type(exc).__name__}: {exc})") from exc

    @staticmethod
    def _backoff(attempt: int) -> float:
        return float(min(8.0, 0.5 * 2 ** (attempt - 1))) * random.uniform(0.8, 1.2)  # as the SDK
