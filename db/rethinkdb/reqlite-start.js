#!/usr/bin/env node
// reqlite-start.js: fieldbench's start script for reqlite (npm package
// reqlite, a JavaScript reimplementation of RethinkDB 2.2 that keeps its
// data in memory). It is our own code: it loads reqlite's unmodified
// modules from where `npm install` put them and works around two defects
// of reqlite 2.3.0 without changing its files:
//
//  1. reqlite's server listens on its driver port on every address
//     (net.Server.listen(port) with no host). Here the server is a subclass
//     whose _createServer listens on the given address only; the script
//     refuses any host outside loopback (127.0.0.0/8) and fieldbench's
//     virtual network (198.18.0.0/15, a node on a host of its own, inside
//     that host's network namespace).
//  2. reqlite's SCRAM salt is base64 with a second "==" appended, which no
//     strict base64 decoder accepts: the Go driver fails the handshake with
//     "illegal base64 data". Each new connection's salt is replaced with
//     valid base64 of 16 random bytes before the handshake starts (the
//     salt is only read once the client's first message arrives).
//
// It also writes one row into rethinkdb.server_status whose
// process.version says what the server is ("reqlite 2.3.0 ..."), the place
// a real RethinkDB reports "rethinkdb 2.4.x ...": the adapter reads it, so
// results name reqlite, never RethinkDB.
//
// Usage: node reqlite-start.js --reqlite DIR --host 127.0.0.1 --port N
// (or --host 198.18.0.K --port 28015 inside the namespace of host K)
// (DIR holds node_modules/reqlite). It prints "reqlite VERSION listening on
// HOST:PORT" once listening, and exits non-zero when it cannot listen.
'use strict';

process.noDeprecation = true; // reqlite uses new Buffer(): one warning per start otherwise

const crypto = require('crypto');
const net = require('net');
const os = require('os');
const path = require('path');

function fail(msg) {
  process.stderr.write('reqlite-start: ' + msg + '\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { host: '127.0.0.1' };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i], val = argv[i + 1];
    if (val === undefined) fail('option ' + key + ' needs a value');
    switch (key) {
      case '--reqlite': opts.dir = val; break;
      case '--host': opts.host = val; break;
      case '--port': opts.port = Number(val); break;
      default: fail('unknown option ' + key + ' (known: --reqlite, --host, --port)');
    }
  }
  if (!opts.dir) fail('--reqlite DIR is required');
  if (!Number.isInteger(opts.port) || opts.port < 1 || opts.port > 65535) fail('--port wants 1..65535');
  // Loopback (127.0.0.0/8) or a host of the virtual network
  // (198.18.0.0/15): never an address of the machine's own interfaces.
  const o = opts.host.split('.').map(Number);
  const loopback = o[0] === 127;
  const vnet = o[0] === 198 && (o[1] === 18 || o[1] === 19);
  if (!net.isIPv4(opts.host) || !(loopback || vnet)) {
    fail('--host ' + opts.host + ' is neither a 127.0.0.0/8 nor a 198.18.0.0/15 address: reqlite runs on loopback or on a host of fieldbench\'s virtual network only');
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const base = path.join(opts.dir, 'node_modules', 'reqlite');
const version = require(path.join(base, 'package.json')).version;
const Server = require(path.join(base, 'lib', 'index.js'));
const Connection = require(path.join(base, 'lib', 'connection.js'));

// BoundServer is reqlite's Server with its own listening socket: the
// same connection handling as reqlite's _createServer, bound to one
// address, with the salt fixed on every connection.
function BoundServer(options) {
  Server.call(this, options);
}
BoundServer.prototype = Object.create(Server.prototype);
BoundServer.prototype.constructor = BoundServer;

BoundServer.prototype._createServer = function () {
  const self = this;
  const server = net.createServer(function (socket) {
    const con = new Connection(socket, self, {
      version: self.protocolVersion,
      authKey: self.authKey,
      minProtocolVersion: self.minProtocolVersion,
      maxProtocolVersion: self.maxProtocolVersion,
    });
    con.salt = crypto.randomBytes(16).toString('base64');
    self._connections[con.id] = con;
  });
  server.on('error', function (err) {
    fail('cannot listen on ' + opts.host + ':' + opts.port + ': ' + err.message);
  });
  server.listen({ port: opts.port, host: opts.host, exclusive: true }, function () {
    process.stdout.write('reqlite ' + version + ' listening on ' + opts.host + ':' + opts.port + '\n');
  });
  return server;
};

const srv = new BoundServer({ 'driver-port': opts.port, silent: true });
srv.databases.rethinkdb.table('server_status').insert({
  id: srv.id,
  name: srv.name,
  network: { hostname: os.hostname() },
  process: {
    pid: process.pid,
    time_started: new Date().toISOString(),
    version: 'reqlite ' + version + ' (a JavaScript reimplementation of RethinkDB 2.2, in memory; started by fieldbench)',
  },
}, { meta: true });

function stop() {
  srv.stop(function () { process.exit(0); });
  setTimeout(function () { process.exit(0); }, 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
