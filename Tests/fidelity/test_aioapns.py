"""A third-party APNs client, aioapns, pointed at our APNs emulator: if it works here, the emulator
speaks Apple's protocol (HTTP/2, ALPN h2, ES256 provider tokens, Apple's reasons), not just ours."""
import asyncio
import json
import ssl
import subprocess
import uuid

import aioapns
import aioapns.connection
import pytest
from aioapns import APNs, NotificationRequest, PushType


def _client(apns_emulator) -> APNs:
    host, port = apns_emulator["url"].removeprefix("https://").split(":")

    class EmulatorProtocol(aioapns.connection.APNsDevelopmentClientProtocol):
        APNS_SERVER = host
        APNS_PORT = int(port)

    with open(apns_emulator["privateKeyPath"]) as key:
        client = APNs(key=key.read(), key_id=apns_emulator["keyID"], team_id=apns_emulator["teamID"],
                      topic=apns_emulator["topic"], use_sandbox=True)
    context = ssl.create_default_context(cafile=apns_emulator["caCertificatePath"])
    context.set_alpn_protocols(["h2"])
    client.pool.ssl_context = context
    client.pool.protocol_class = EmulatorProtocol
    return client


def _deliveries(apns_emulator) -> list:
    out = subprocess.run(
        ["curl", "-s", "--http2", "--cacert", apns_emulator["caCertificatePath"], apns_emulator["deliveriesURL"]],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_aioapns_delivers_and_hears_apples_reasons(apns_emulator):
    device = "ab" * 32

    async def scenario():
        client = _client(apns_emulator)
        alert = NotificationRequest(
            device_token=device, message={"aps": {"alert": {"title": "New reply", "body": "from aioapns"}, "badge": 1}},
            notification_id=str(uuid.uuid4()), push_type=PushType.ALERT, priority=10, collapse_key="user-1")
        sent = await client.send_notification(alert)
        assert sent.is_successful, sent.description

        bad_token = await client.send_notification(NotificationRequest(device_token="nothex", message={"aps": {}}))
        assert not bad_token.is_successful and bad_token.description == "BadDeviceToken"

        bad_priority = await client.send_notification(NotificationRequest(
            device_token=device, message={"aps": {"content-available": 1}}, push_type=PushType.BACKGROUND, priority=10))
        assert not bad_priority.is_successful and bad_priority.description == "BadPriority"

        too_large = await client.send_notification(NotificationRequest(
            device_token=device, message={"aps": {"alert": "x" * 5000}}))
        assert not too_large.is_successful and too_large.status == "413"
        return alert

    alert = asyncio.run(scenario())
    deliveries = _deliveries(apns_emulator)
    assert len(deliveries) == 1
    delivery = deliveries[0]
    assert delivery["deviceToken"] == device
    assert delivery["apnsID"] == alert.notification_id
    assert delivery["pushType"] == "alert" and delivery["priority"] == 10 and delivery["collapseID"] == "user-1"
