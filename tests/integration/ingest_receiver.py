#!/usr/bin/env python3
"""A stand-in for Grafana Pyroscope's HTTP ingest endpoint, for tests: POST /ingest with the
profile as a multipart form's "profile" file (or as the raw body), metadata in the query.
Each request accepted is saved as N.query (the query string) and N.pb.gz (the profile) in DIR.

usage: ingest_receiver.py DIR PORTFILE [STATUS]
Listens on 127.0.0.1 on a free port, written to PORTFILE once listening.  STATUS (default 200)
is the HTTP status answered, to play a failing server (503).
"""
import email.parser
import http.server
import os
import sys
import urllib.parse

OUT, PORTFILE = sys.argv[1], sys.argv[2]
STATUS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
count = 0


def profile_of(content_type, body):
    if not content_type.startswith("multipart/form-data"):
        return body
    msg = email.parser.BytesParser().parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    for part in msg.get_payload():
        if part.get_param("name", header="content-disposition") == "profile":
            return part.get_payload(decode=True)
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        url = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        profile = profile_of(self.headers.get("Content-Type", ""), body)
        if url.path != "/ingest" or profile is None:
            self.send_response(400)
            self.end_headers()
            return
        if STATUS == 200:
            count += 1
            with open(os.path.join(OUT, "%d.query" % count), "w") as f:
                f.write(url.query + "\n")
            with open(os.path.join(OUT, "%d.pb.gz" % count), "wb") as f:
                f.write(profile)
        self.send_response(STATUS)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
