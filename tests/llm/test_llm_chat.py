"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1 that speaks the chat-completions protocol."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from llm_server import ChatServer, chat_server, completion

from rankbench.errors import InputError
from rankbench.llm.chat import (
    Chat,
    OpenAIEndpoint,
    chat_from_spec,
    first_token_probabilities,
)

server = chat_server


def chat(server: ChatServer, tmp_path: Path, **options: object) -> Chat:
    settings = {"timeout": 2.0, "retries": 2, "backoff": 0.01, **options}
    return Chat(OpenAIEndpoint(server.base_url, "test-model", **settings), tmp_path / "cache", seed=7)


MESSAGES = [{"role": "user", "content": "Combien de temps pour être remboursé ?"}]


def test_a_request_sends_deterministic_parameters_and_returns_the_text(server: ChatServer, tmp_path: Path) -> None:
    server.answer((200, completion("14 jours"), 0.0))
    assert chat(server, tmp_path).text(MESSAGES, max_tokens=20) == "14 jours"
    (sent,) = server.requests
    assert sent["model"] == "test-model" and sent["messages"] == MESSAGES
    assert sent["temperature"] == 0.0 and sent["seed"] == 7 and sent["max_tokens"] == 20


def test_the_same_request_is_answered_from_the_disk_cache(server: ChatServer, tmp_path: Path) -> None:
    server.answer((200, completion("oui"), 0.0), (200, completion("non"), 0.0))
    first = chat(server, tmp_path)
    assert first.text(MESSAGES, 5) == "oui"
    again = chat(server, tmp_path)  # a new process would build a new Chat over the same cache folder
    assert again.text(MESSAGES, 5) == "oui" and again.sent == 0
    assert len(server.requests) == 1
    assert again.text(MESSAGES, 6) == "non"  # other parameters: another key
    assert len(server.requests) == 2


def test_a_corrupt_cached_response_is_named_removed_and_asked_again(server: ChatServer, tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    server.answer((200, completion("oui"), 0.0), (200, completion("oui"), 0.0))
    chat(server, tmp_path).text(MESSAGES, 5)
    (cached,) = (tmp_path / "cache").rglob("*.json")
    cached.write_bytes(cached.read_bytes()[:20])  # a full disk, a killed copy
    with caplog.at_level("WARNING"):
        assert chat(server, tmp_path).text(MESSAGES, 5) == "oui"
    assert f"cached response {cached} is corrupt" in caplog.text and len(server.requests) == 2
    assert chat(server, tmp_path).text(MESSAGES, 5) == "oui" and len(server.requests) == 2  # cached anew


def test_429_and_500_are_retried_until_success(server: ChatServer, tmp_path: Path) -> None:
    server.answer((429, {"error": "slow down"}, 0.0), (500, {"error": "boom"}, 0.0), (200, completion("3"), 0.0))
    assert chat(server, tmp_path).text(MESSAGES, 1) == "3"
    assert len(server.requests) == 3


def test_errors_beyond_the_retries_name_the_status(server: ChatServer, tmp_path: Path) -> None:
    server.answer(*[(503, {"error": "overloaded"}, 0.0)] * 3)
    with pytest.raises(InputError, match=r"HTTP 503.*overloaded"):
        chat(server, tmp_path).text(MESSAGES, 1)
    assert len(server.requests) == 3


def test_a_client_error_is_not_retried(server: ChatServer, tmp_path: Path) -> None:
    server.answer((401, {"error": "bad key"}, 0.0))
    with pytest.raises(InputError, match="HTTP 401"):
        chat(server, tmp_path).text(MESSAGES, 1)
    assert len(server.requests) == 1


def test_a_slow_server_times_out_with_a_clear_error(server: ChatServer, tmp_path: Path) -> None:
    server.answer((200, completion("late"), 1.5), (200, completion("late"), 1.5))
    with pytest.raises(InputError, match=r"did not answer within 0.2 s \(2 attempts\)"):
        chat(server, tmp_path, timeout=0.2, retries=1).text(MESSAGES, 1)
    assert not (tmp_path / "cache").exists()


def test_an_unreachable_port_fails_at_once(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the block ends: nothing listens there
    endpoint = OpenAIEndpoint(f"http://127.0.0.1:{port}/v1", "m", timeout=5, retries=3, backoff=10)
    with pytest.raises(InputError, match=r"is unreachable.*llm.base_url"):
        Chat(endpoint, tmp_path).text(MESSAGES, 1)


@pytest.mark.parametrize("body", [b"not json", {"choices": []}, {"choices": [{"message": {"content": None}}]}])
def test_a_malformed_response_is_an_error(server: ChatServer, tmp_path: Path, body: object) -> None:
    server.answer((200, body, 0.0))
    with pytest.raises(InputError, match="response"):
        chat(server, tmp_path).text(MESSAGES, 1)


def test_logprobs_are_requested_and_read(server: ChatServer, tmp_path: Path) -> None:
    server.answer((200, completion("Oui", [("Oui", -0.1), (" oui", -3.0), ("Non", -2.5)]), 0.0))
    response = chat(server, tmp_path).request(MESSAGES, 1, logprobs=5)
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 5
    probabilities = first_token_probabilities(response)
    assert probabilities is not None
    assert probabilities["oui"] == pytest.approx(2.718281828 ** -0.1 + 2.718281828 ** -3.0)
    assert probabilities["non"] == pytest.approx(2.718281828 ** -2.5)
    assert first_token_probabilities(completion("Oui")) is None


def test_the_api_key_comes_from_the_named_environment_variable(server: ChatServer, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {"backend": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "RANKBENCH_TEST_KEY",
            "cache": str(tmp_path)}
    monkeypatch.delenv("RANKBENCH_TEST_KEY", raising=False)
    with pytest.raises(InputError, match="RANKBENCH_TEST_KEY"):
        chat_from_spec(spec)
    monkeypatch.setenv("RANKBENCH_TEST_KEY", "sk-test")
    server.answer((200, completion("ok"), 0.0))
    assert chat_from_spec(spec).text(MESSAGES, 1) == "ok"
    assert server.headers_seen[0]["Authorization"] == "Bearer sk-test"


def test_a_reply_echoing_the_key_is_masked_before_it_is_cached_or_used(server: ChatServer, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the reply was cached (a file) and returned as it came, key included."""
    key = "ck/9f8e7d6c+5b4a3210"
    monkeypatch.setenv("RANKBENCH_TEST_CHAT_KEY", key)
    server.answer((200, completion(f"your key is {key} ({key.replace('/', '%2F')})"), 0.0))
    text = chat(server, tmp_path, api_key=key).text(MESSAGES, 20)
    assert text == "your key is *** (***)"
    assert not [path for path in (tmp_path / "cache").rglob("*.json") if "9f8e7d6c" in path.read_text()]
