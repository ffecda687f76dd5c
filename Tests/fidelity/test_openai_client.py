"""The official `openai` Python client pointed at our assist emulator: if it works here, the emulator
speaks the OpenAI-compatible chat-completions protocol (bodies, server-sent events, errors), not
just what our own client expects."""
import openai
import pytest
import requests

QUESTION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How do I reset my password?"}]
RULE_ANSWER = "(test-model) How do I reset my password?"


def _client(assist_emulator, *, max_retries: int = 0, api_key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=assist_emulator["baseURL"], api_key=api_key or assist_emulator["apiKey"],
                         max_retries=max_retries, timeout=30)


def _script(assist_emulator, *outcomes: dict) -> None:
    answer = requests.post(assist_emulator["controlURL"] + "/script", json={"outcomes": list(outcomes)}, timeout=10)
    assert answer.status_code == 200, answer.text


def _requests(assist_emulator) -> list:
    answer = requests.get(assist_emulator["controlURL"] + "/requests", timeout=10)
    assert answer.status_code == 200
    return answer.json()


def test_a_plain_completion(assist_emulator):
    completion = _client(assist_emulator).chat.completions.create(model="test-model", messages=QUESTION, max_tokens=100)
    assert completion.object == "chat.completion"
    assert completion.model == "test-model"
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == RULE_ANSWER
    assert choice.finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (16, 10, 26)
    recorded = _requests(assist_emulator)
    assert [message["content"] for message in recorded[0]["messages"]] == [m["content"] for m in QUESTION]
    assert recorded[0]["authorization"] == "bearer" and recorded[0]["maxTokens"] == 100


def test_a_streamed_completion_with_usage(assist_emulator):
    stream = _client(assist_emulator).chat.completions.create(
        model="test-model", messages=QUESTION, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == RULE_ANSWER
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 26


def test_max_tokens_ends_with_length(assist_emulator):
    completion = _client(assist_emulator).chat.completions.create(model="test-model", messages=QUESTION, max_tokens=3)
    assert completion.choices[0].message.content == "(test-model)"
    assert completion.choices[0].finish_reason == "length"


def test_models_are_listed(assist_emulator):
    assert [model.id for model in _client(assist_emulator).models.list()] == ["test-model", "other-model"]


def test_a_429_is_a_rate_limit_error_with_retry_after(assist_emulator):
    _script(assist_emulator, {"kind": "status", "status": 429, "retryAfter": 2})
    with pytest.raises(openai.RateLimitError) as raised:
        _client(assist_emulator).chat.completions.create(model="test-model", messages=QUESTION)
    assert raised.value.status_code == 429
    assert raised.value.code == "rate_limit_exceeded"
    assert raised.value.response.headers["retry-after"] == "2"


def test_a_500_is_an_api_status_error(assist_emulator):
    _script(assist_emulator, {"kind": "status", "status": 500})
    with pytest.raises(openai.APIStatusError) as raised:
        _client(assist_emulator).chat.completions.create(model="test-model", messages=QUESTION)
    assert raised.value.status_code == 500
    assert isinstance(raised.value, openai.InternalServerError)


def test_the_client_retries_a_503_by_itself(assist_emulator):
    _script(assist_emulator, {"kind": "status", "status": 503, "retryAfter": 1})
    completion = _client(assist_emulator, max_retries=1).chat.completions.create(model="test-model", messages=QUESTION)
    assert completion.choices[0].message.content == RULE_ANSWER
    assert [request["status"] for request in _requests(assist_emulator)] == [503, 200]


def test_refusals_are_the_clients_named_errors(assist_emulator):
    with pytest.raises(openai.AuthenticationError) as wrong_key:
        _client(assist_emulator, api_key="sk-wrong").chat.completions.create(model="test-model", messages=QUESTION)
    assert wrong_key.value.code == "invalid_api_key"
    with pytest.raises(openai.NotFoundError) as unknown_model:
        _client(assist_emulator).chat.completions.create(model="no-such-model", messages=QUESTION)
    assert unknown_model.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad_role:
        _client(assist_emulator).chat.completions.create(model="test-model", messages=[{"role": "wizard", "content": "hi"}])
    assert bad_role.value.body["type"] == "invalid_request_error"
    recorded = str(_requests(assist_emulator))
    assert "sk-wrong" not in recorded and assist_emulator["apiKey"] not in recorded


def test_a_cut_stream_fails_the_iteration(assist_emulator):
    _script(assist_emulator, {"kind": "cutStream", "afterChunks": 2})
    stream = _client(assist_emulator).chat.completions.create(model="test-model", messages=QUESTION, stream=True)
    received = []
    # The connection closes mid-body: the client reports a broken connection, not a finished stream.
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            received.append(chunk)
    assert len(received) == 2
