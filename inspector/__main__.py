from inspector.cli import console

console()
