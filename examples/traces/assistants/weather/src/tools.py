"""The weather tool. The example has no weather service: in the imported cases, production's answers
(the cases' mocks) stand in for it, so a case that reached this function would show an error."""


def get_weather(ctx, city):
    raise RuntimeError(f"no weather service in the example (asked for {city}): the imported mocks answer")
