# A WSGI app that says which version and process answered.
import os


def application(environ, start_response):
    body = ("app %s pid=%d\n" % (os.environ.get("APP_VERSION", "v0"), os.getpid())).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
