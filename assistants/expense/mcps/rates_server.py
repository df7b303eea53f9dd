"""An exchange-rate MCP server for the expense assistant, written with the official ``mcp`` SDK.

agent-test starts it on stdio for every run of the expense agent (assistants/expense/mcps/rates.mcp.yao)
and offers its tool to the model as ``rates__convert``. The rates are fixed, so the example runs offline
and answers the same every time."""

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

RATES_TO_USD = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CNY": 0.14}

server = MCPServer("rates", log_level="WARNING")


@server.tool()
def convert(amount: float, currency: str) -> dict:
    """Convert an amount in another currency to USD (expense reports are filed in USD)."""
    code = currency.upper()
    if code not in RATES_TO_USD:
        raise ToolError(f"no rate for {currency!r}; known currencies: {', '.join(RATES_TO_USD)}")
    rate = RATES_TO_USD[code]
    return {"amount": amount, "currency": code, "usd": round(amount * rate, 2), "rate": rate}


if __name__ == "__main__":
    server.run()
