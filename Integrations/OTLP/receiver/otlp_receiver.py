"""A minimal OTLP/HTTP receiver on the official protocol definitions (opentelemetry-proto).

Serves POST /v1/traces (protobuf) on 127.0.0.1, decodes every export request into
ExportTraceServiceRequest and appends each span to OUT as one JSON object a line:
service, name, trace_id, span_id, parent_span_id (hex, "" for a root) and attributes.
A request that does not decode is answered 400 and counted in OUT as {"error": ...},
so that a test sees it. The chosen port is written to PORT_FILE once it listens.

    python otlp_receiver.py PORT_FILE OUT
"""

import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def attribute_value(value):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in ("string_value", "bool_value", "int_value", "double_value") else str(value)


class Handler(BaseHTTPRequestHandler):
    out = None

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as error:
            self.write({"error": str(error)})
            self.send_error(400)
            return
        for resource_spans in request.resource_spans:
            service = next(
                (a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"),
                "",
            )
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.write(
                        {
                            "service": service,
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "attributes": {a.key: attribute_value(a.value) for a in span.attributes},
                        }
                    )
        payload = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def write(self, record):
        Handler.out.write(json.dumps(record) + "\n")
        Handler.out.flush()

    def log_message(self, format, *args):
        pass


def main():
    if len(sys.argv) != 3:
        print("usage: otlp_receiver.py PORT_FILE OUT", file=sys.stderr)
        sys.exit(64)
    # A parent may have started this process with SIGTERM blocked; let it end the receiver.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    Handler.out = open(sys.argv[2], "a", encoding="utf-8")
    server = HTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w", encoding="utf-8") as port_file:
        port_file.write(str(server.server_address[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
