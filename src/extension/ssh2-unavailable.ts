/**
 * Stand-in for the `ssh2` package inside the extension bundle. docker-modem requires ssh2 when it
 * loads, but only uses it for ssh:// Docker hosts; the real package drags in optional native code
 * that VS Code's runtime cannot load, and the .vsix carries no node_modules. Local sockets and
 * tcp:// hosts work as usual; an ssh:// host gets an error that says what to do instead.
 */
export class Client {
  constructor() {
    throw new Error('TBRL Studio in VS Code cannot reach Docker over ssh:// (the ssh transport is not bundled). Forward the socket instead: `ssh -NL /tmp/docker.sock:/var/run/docker.sock host`, then set tbrl.docker.socketPath to /tmp/docker.sock; or use the tbrl CLI on that host.');
  }
}
