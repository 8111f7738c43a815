"""What an interviewer must not ask about (docs/interview.md#compliance: QuickCheck's
``prohibited_topic``, the Auditor).

The list follows Japan's Ministry of Health, Labour and Welfare guidance on fair recruitment
(公正な採用選考: matters unrelated to aptitude and ability, and matters of belief) and the
protected characteristics common to other jurisdictions. It goes into the Interviewer's,
QuickCheck's and Auditor's prompts; the QuickCheck and the Auditor judge a question against it.
"""

from __future__ import annotations

PROHIBITED_TOPICS: tuple[str, ...] = (
    "family origin, registered domicile or birthplace (本籍・出生地)",
    "family members: their occupation, income, health, education or relationships (家族)",
    "housing and living environment (住宅状況・生活環境)",
    "religion or beliefs (宗教・思想・信条)",
    "political party support or political views (支持政党)",
    "view of life, respected people, newspapers or books read (人生観・尊敬する人物・購読新聞)",
    "labour union membership or activities (労働組合)",
    "age or date of birth, unless the job legally requires it",
    "gender, sexual orientation or gender identity",
    "marital status, pregnancy or plans for children",
    "health, medical history or disability, beyond whether the applicant can do the job's essential tasks",
    "race, ethnicity or nationality (the right to work may be asked, the nationality may not)",
)

TONE_RULES: tuple[str, ...] = (
    "polite and neutral; no pressure, no sarcasm, no judgement of the applicant",
    "one question at a time, short and clear",
    "never ask again for a fact the applicant already gave",
)


def bullet_list(items: tuple[str, ...]) -> str:
    return "\n".join(f"- {item}" for item in items)
