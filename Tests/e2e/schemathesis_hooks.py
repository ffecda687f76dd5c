"""What schemathesis cannot learn from openapi.yaml: every message a client sends carries an
Idempotency-Key of its own (a retry, the same one). The document states the key's shape; that one
key must not be reused for a different message is state, which a schema cannot say, and a
generator that reuses one valid key for every case would see all but the first refused (422
`idempotency_key_reused`, as the IETF draft asks). So a valid key is made unique per request, as a
real client's is; missing and malformed keys are left as generated."""
import re
import uuid

import schemathesis

VALID_KEY = re.compile(r"^[!-~]{1,200}$")


@schemathesis.hook("map_headers")
def a_key_per_message(context, headers):
    if not headers:
        return headers
    for name in list(headers):
        value = headers[name]
        if name.lower() == "idempotency-key" and isinstance(value, str) and VALID_KEY.match(value):
            headers[name] = f"{value}-{uuid.uuid4().hex}"
    return headers
